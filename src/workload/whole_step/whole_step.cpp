// The whole-step executor's entry (see whole_step.hpp): the plan (plan.hpp), one RDMA run of
// the application over it (runtime.hpp) on the fabric, and the trace.
#include "src/workload/whole_step/whole_step.hpp"

#include <algorithm>
#include <cstdio>

#include "stepsim/core/memory.hpp"
#include "stepsim/pdes/mpi_sync.hpp"

#include "src/workload/whole_step/plan.hpp"
#include "src/workload/whole_step/runtime.hpp"

namespace stepsim::workload {
namespace {

// What every engine run of the application over a plan sets: the fabric at the step's fidelity,
// the scenario's end, and the work the progress display counts.
fabric::FabricParams run_setup(const Scenario& s, const whole_step::StepApp& app,
                               pdes::EngineOptions& engine) {
  fabric::FabricParams fabric = s.fabric;
  if (s.fidelity == "cell") fabric.use_cells();
  engine.end = std::min(engine.end, s.end);
  engine.progress_work = [&app] { return app.delivered_bytes(); };
  return fabric;
}

}  // namespace

double whole_step_state_bytes(std::uint64_t records, std::uint64_t connections) {
  // Per collective record: its start and end (two 8-byte atomics) while the step runs, the
  // same two times again in the collection's reduction, and its CollectiveRecord in the trace;
  // per connection: the plan's nic::Connection.
  return static_cast<double>(records) *
             (kRecordAtomicsBytes + 2 * sizeof(std::int64_t) + sizeof(CollectiveRecord)) +
         static_cast<double>(connections) * sizeof(nic::Connection);
}

namespace {

// Refuses a plan whose state (on every rank; whole_step_state_bytes) exceeds this node's memory,
// on every rank alike; before the engine starts.
Result<bool> check_state_memory(const whole_step::StepPlan& plan, const pdes::Sync& sync) {
  const int local = std::min(std::max(1, sync.size()), local_rank_count());
  char what[256];
  std::snprintf(what, sizeof what,
                "the whole step's own state (%llu collective records, %zu connections) on %d "
                "rank%s of this node",
                static_cast<unsigned long long>(plan.records), plan.conns.size(), local,
                local == 1 ? "" : "s");
  auto ok =
      check_memory_estimate(local * whole_step_state_bytes(plan.records, plan.conns.size()), what);
  if (pdes::all_ranks_ok(ok.ok())) return true;
  if (!ok) return ok;
  return Error{"another rank refused the run (its message is printed by that rank only)"};
}

}  // namespace

Result<StepTrace> run_whole_step_trace(const Scenario& s, const topology::Topology& topo,
                                       const std::vector<CommModel*>& folded, pdes::Sync& sync,
                                       pdes::EngineOptions engine,
                                       const std::function<bool(double)>& progress,
                                       fabric::FabricSamples* samples,
                                       const std::function<void(std::uint32_t)>& foldable,
                                       const std::vector<std::uint32_t>* trace_gpus) {
  if (folded.size() != std::max<std::size_t>(1, s.jobs.size())) {
    return Error{"whole step: " + std::to_string(folded.size()) + " folded comm models for " +
                 std::to_string(s.jobs.size()) + " jobs"};
  }
  auto made = whole_step::make_plan(s, topo, folded);
  if (!made) return made.error();
  whole_step::StepPlan planned = std::move(made).value();
  if (trace_gpus != nullptr) whole_step::select_traced(*trace_gpus, planned);
  const whole_step::StepPlan& plan = planned;
  if (auto ok = check_state_memory(plan, sync); !ok) return ok.error();
  if (foldable && plan.foldable > 1) foldable(plan.foldable);
  whole_step::StepApp app(plan, s);
  const fabric::FabricParams fabric = run_setup(s, app, engine);
  if (progress) {
    auto inner = engine.on_progress;
    engine.on_progress = [inner, progress](const pdes::Progress& p) {
      if (inner) inner(p);
      if (!progress(p.now.seconds())) pdes::Engine::request_stop();
    };
  }
  auto r = nic::run_rdma(topo, plan.conns, s.nic, fabric, &app, sync, std::move(engine), nullptr,
                         samples);
  if (!r) return r.error();
  nic::RdmaRun run = std::move(r).value();
  const bool stopped = !run.stats.completed && pdes::Engine::stop_requested();
  return app.collect(sync, run, stopped);
}

Result<std::optional<SimTime>> whole_step_end(const Scenario& s, const topology::Topology& topo,
                                              const std::vector<CommModel*>& folded,
                                              pdes::Sync& sync, pdes::EngineOptions engine) {
  auto made = whole_step::make_plan(s, topo, folded);
  if (!made) return made.error();
  const whole_step::StepPlan& plan = *made;
  if (auto ok = check_state_memory(plan, sync); !ok) return ok.error();
  whole_step::StepApp app(plan, s);
  const fabric::FabricParams fabric = run_setup(s, app, engine);
  // At every window boundary, in the window's synchronisation: once every rank's used GPUs are
  // done (every GPU is on one rank's server), stop.
  engine.stop_vote = [&app] { return app.used_gpus_done(); };
  auto r = nic::run_rdma(topo, plan.conns, s.nic, fabric, &app, sync, std::move(engine));
  if (!r) return r.error();
  if (!r->stats.stopped_by_vote) return std::optional<SimTime>{};
  pdes::Engine::clear_stop();
  return std::optional<SimTime>{app.last_gpu_end(sync)};
}

}  // namespace stepsim::workload
