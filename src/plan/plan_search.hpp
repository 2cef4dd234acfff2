#pragma once
// One layout's evaluation in `stepsim plan`: the scenario with the layout applied and validated,
// its per-GPU memory (workload::estimate_memory), its step at analytical fidelity in process
// (run_step with the alpha-beta bound), and the re-run of the best ones at a confirming fidelity
// (the same step paths `stepsim run` takes, no subprocess).

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "src/plan/layout_space.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::plan {

/// One fidelity's numbers of a layout's step.
struct Outcome {
  double step_s = 0;
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
  double compute_s = 0;
  double bubble_s = 0;
  std::array<double, workload::kCommGroups> exposed_s{};
  bool complete = true;
};

/// A layout with what the planner learned about it.
struct Candidate {
  Layout layout;
  double memory_peak = 0;  ///< bytes on the peak stage's most-loaded GPU
  double capacity = 0;     ///< the GPU's HBM
  int peak_stage = 0;
  const char* largest_term = "";  ///< the peak stage's largest memory term
  bool fits = false;
  bool scored = false;  ///< the analytical step ran
  Outcome analytical;
  double bound_step_s = 0;  ///< the step's compute-only lower bound (step_bound.hpp)
  bool pruned = false;      ///< not scored: its bound cannot reach the best --top
  bool confirmed = false;
  Outcome confirm;
  int rank = 0;            ///< by the analytical objective, 1 = best, among those that fit
  int confirmed_rank = 0;  ///< by the confirming fidelity's objective, among the confirmed
};

/// `base` with `l` applied; the error is validate()'s (the layout is not one).
Result<workload::Scenario> layout_scenario(const workload::Scenario& base,
                                           const topology::Topology& topo, const Layout& l);

/// The memory columns of `c` from the scenario of its layout.
void add_memory(const workload::Scenario& s, Candidate& c);

/// The step of `s` at analytical fidelity; `cache` (make_analytical_cache of `topo`) is shared
/// by the layouts of one search.
Result<Outcome> run_analytical(const workload::Scenario& s, const topology::Topology& topo,
                               const std::shared_ptr<workload::AnalyticalCache>& cache);

/// What the confirmations of one search share at cell or packet fidelity: the collectives
/// already run, by (kind, size, GPUs, and the copies run beside them: the TP and CP sizes of
/// the layout that ran it). The layouts of one scenario have the same coll.*, nic.* and fabric.*
/// keys, and a collective's packet run depends on nothing else, so a later layout that asks
/// for one gets the cost its own run would have given (the same step, byte for byte).
struct ConfirmCache;
std::shared_ptr<ConfirmCache> make_confirm_cache();
/// Collectives run so far and asked for again (by a later layout) from `cache`.
struct ConfirmCacheStats {
  std::size_t runs = 0;
  std::size_t reused = 0;
};
ConfirmCacheStats confirm_cache_stats(const ConfirmCache& cache);

/// The step of `s` at `confirm` fidelity: cell or packet (the step's collectives memoized, as
/// `stepsim run` does, and shared with the other confirmations through `cache`, which may be
/// null), or whole (step.mode whole at the scenario's fidelity if packet or cell, else cell;
/// `cache` unused). Collective over the MPI ranks; `threads` OpenMP threads per rank.
Result<Outcome> run_confirm(const workload::Scenario& s, const topology::Topology& topo,
                            const std::string& confirm, int threads, int rank,
                            const std::shared_ptr<ConfirmCache>& cache = nullptr);

/// The objective (larger is better): tokens/s per GPU or MFU.
double objective(const Outcome& o, const std::string& name);

}  // namespace stepsim::plan
