#pragma once
// The layouts `stepsim plan` searches: every way to lay the scenario's model out on N GPUs
// (TP inside the NVLink domain, PP, virtual stages, CP, EP, DP, micro-batch, ZeRO stage,
// recompute, TP overlap) with the global batch fixed. A layout that validate() refuses is not
// one; a layout that does not fit in HBM is one (the planner counts and drops it).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/workload/scenario.hpp"

namespace stepsim::plan {

/// One layout: the parallel sizes and the knobs that change memory and time.
struct Layout {
  int tp = 1;
  int pp = 1;
  int vpp = 1;
  int cp = 1;
  int ep = 1;
  int etp = 0;  ///< expert TP (parallel.etp); 0: tp
  int dp = 1;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  int zero = 1;
  std::string recompute = "none";
  bool tp_overlap = false;
  /// The scenario's uneven first/last stage (Megatron's --decoder-first-pipeline-num-layers)
  /// kept when it still splits the layers; otherwise the even split.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  /// The scenario's parallel.layout, kept where its virtual stages are this pp x vpp; else the
  /// even split.
  std::string pipeline_layout;
  friend bool operator==(const Layout&, const Layout&) = default;
};

/// "tp8 pp8 vpp1 cp1 ep1 dp16 mb1 z1 full" (+ " ovl" with TP overlap, " etp1" with an expert
/// TP other than tp).
std::string layout_text(const Layout& l);

/// The layout of a scenario's own parallel settings (on its GPUs).
Layout layout_of(const workload::Parallelism& p);

/// `s` with `l`'s parallel settings (every other key as it was).
void apply_layout(const Layout& l, workload::Scenario& s);

/// What the enumeration may choose from (the defaults: what Megatron-LM users tune).
struct SpaceOptions {
  int gpus = 0;                              ///< N: tp pp cp dp = N
  int nvlink = 8;                            ///< GPUs of a server: TP divides it
  std::vector<std::int64_t> global_batches;  ///< one, or a range to search
  std::vector<int> cp = {1, 2, 4, 8};
  std::vector<int> vpp = {1, 2, 3, 4, 6, 8};
  std::vector<std::int64_t> micro_batch = {1, 2, 4, 8};
  std::vector<int> zero = {0, 1, 2, 3};
  std::vector<std::string> recompute = {"none", "selective", "full"};
};

/// Every candidate layout of `s` (its model, its uneven first/last stage) under `o`, in a fixed
/// order (TP from the largest down, then CP, PP and VPP up). Candidates pass the cheap arithmetic
/// rules (sizes divide, layers split over the virtual stages, the batch over micro-batches and DP);
/// validate() has the last word.
std::vector<Layout> enumerate_layouts(const workload::Scenario& s, const SpaceOptions& o);

}  // namespace stepsim::plan
