#pragma once
// `stepsim plan`'s analytical pass: every layout through validate(), the memory model and the
// analytical step, or (`prune`) only those whose compute bound (src/plan/step_bound.hpp) can
// still reach the best `top`: the layouts that fit are scored in the order of their bound, best
// first, and once a bound's objective falls below that of the `top`-th best distinct step found
// so far, it and every layout after it are skipped (counted as pruned). The best `top` (the
// ranked table, the confirmed layouts) are then the same as without pruning.

#include <cstddef>
#include <functional>
#include <vector>

#include "src/cli/plan_report.hpp"
#include "src/plan/layout_space.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {

/// Called after each layout: layouts looked at, of how many, and how many fit so far.
using PlanTick = std::function<void(std::size_t done, std::size_t total, std::size_t fit)>;

/// What the analytical pass does.
struct ScoringOptions {
  bool prune = false;
  /// Pruning: a layout whose compute bound can reach the best `top` also has its layers'
  /// always-exposed collectives priced before it is scored (false: the compute bound alone).
  bool price_collectives = true;
  int top = 5;  ///< the best this many must be exact
  std::string objective = "tokens";
  int ranks = 1;  ///< MPI ranks (a stop is agreed over them)
};

/// A stop asked for on any of `ranks` MPI ranks (they search the same layouts and stop together).
bool stop_agreed(int ranks);

/// Whether two candidates are the same step (the same sizes and analytical step time: a ZeRO
/// stage that changes the memory only); the confirmation passes the second over.
bool same_step(const plan::Candidate& a, const plan::Candidate& b);

/// The analytical pass over `layouts` into `p` (rows, counts, pruned, the wall time).
Result<bool> search_analytical(const workload::Scenario& base, const topology::Topology& topo,
                               const std::vector<plan::Layout>& layouts, const ScoringOptions& opt,
                               const PlanTick& tick, PlanSearch& p);

}  // namespace stepsim::cli
