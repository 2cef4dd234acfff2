#pragma once
// moe.routing: how the routed tokens spread over an MoE layer's experts, and what that does to
// the busiest EP rank (experts are placed on the EP ranks contiguously: rank r holds experts
// r E/ep .. (r+1) E/ep - 1). balanced: every expert the same share (as the benchmarks force
// it); zipf:ALPHA: the i-th most loaded expert takes i^-ALPHA / H(E, ALPHA) of the tokens, the
// ranks assigned to experts by a permutation per layer drawn from the counter-based RNG keyed
// by the layer; file:PATH: one line per MoE layer (or one line for all), E token counts or
// fractions each.

#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// The zipf:ALPHA shares of `experts` experts in rank order (largest first), summing to 1.
std::vector<double> zipf_pmf(int experts, double alpha);
/// Layer `moe_layer`'s zipf shares by expert: zipf_pmf permuted by the layer's RNG stream.
std::vector<double> zipf_layer_loads(int experts, double alpha, int moe_layer);

/// Parses moe.routing's text: balanced, zipf:ALPHA (ALPHA >= 0) or file:PATH (relative paths
/// from `base_dir`), reading the file; the loads by MoE layer (empty for balanced and zipf,
/// which are computed as needed). Errors name the key, or the file and line.
Result<std::vector<std::vector<double>>> read_routing(const std::string& routing, int experts,
                                                      int moe_layers, const std::string& base_dir);

/// The busiest EP rank of the MoE layers, relative to the even split.
struct MoeLoad {
  /// Routed token copies per GPU of the busiest EP rank, in units of T x top_k (the micro-batch's
  /// tokens per GPU times top_k): capacity_factor with a capacity (every expert padded to its
  /// capacity), ep x the busiest rank's share when dropless. The mean over the MoE layers.
  double tokens = 1;
  double busiest_share = 0;  ///< the busiest EP rank's share of the tokens (mean over layers)
  double dropped = 0;        ///< share of the token copies over capacity (dropped)
};
/// moe.routing's effect on `s`'s MoE layers (s.moe.expert_loads for file:, zipf computed).
MoeLoad moe_load(const Scenario& s);

}  // namespace stepsim::workload
