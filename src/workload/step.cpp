// run_step (see step.hpp): the memoized executor over the comm model (after a listing pass for
// the bulk models), then the summary.
#include "stepsim/workload/step.hpp"

#include "src/workload/memoized_comm.hpp"
#include "src/workload/memoized_executor.hpp"
#include "src/workload/whole_step/whole_step.hpp"

namespace stepsim::workload {

namespace {

Result<StepResult> run_memoized(const Scenario& s, const topology::Topology& topo, CommModel& comm,
                                const std::function<bool(double)>& progress, bool records) {
  if (comm.wants_all_ops()) {
    ListingComm listing;
    MemoizedExecutor first(s, listing, {}, false);
    if (auto ok = first.run(); !ok) return ok.error();
    if (auto ok = comm.prepare(listing.ops); !ok) return ok.error();
  }
  MemoizedExecutor step(s, comm, progress, records);
  auto trace = step.run();
  if (!trace) return trace.error();
  return summarize_step(s, topo, std::move(trace).value());
}

}  // namespace

Result<StepResult> run_step(const Scenario& s, const topology::Topology& topo, CommModel& comm,
                            const std::function<bool(double)>& progress) {
  return run_memoized(s, topo, comm, progress, true);
}

Result<StepResult> run_step_totals(const Scenario& s, const topology::Topology& topo,
                                   CommModel& comm) {
  return run_memoized(s, topo, comm, {}, false);
}

Result<StepResult> run_whole_step(const Scenario& s, const topology::Topology& topo,
                                  const std::vector<CommModel*>& folded, pdes::Sync& sync,
                                  pdes::EngineOptions engine,
                                  const std::function<bool(double)>& progress,
                                  fabric::FabricSamples* samples,
                                  const std::function<void(std::uint32_t)>& foldable,
                                  const std::vector<std::uint32_t>* trace_gpus) {
  auto trace = run_whole_step_trace(s, topo, folded, sync, std::move(engine), progress, samples,
                                    foldable, trace_gpus);
  if (!trace) return trace.error();
  return summarize_step(s, topo, std::move(trace).value());
}

}  // namespace stepsim::workload
