#pragma once
/// The step's front door: a validated scenario in, its StepResult out. It chooses the executor
/// (step.mode and fidelity: the memoized executor over one pipeline, or the whole step on one
/// engine run), the comm model of the fidelity, each job's model for the collectives inside a
/// server, rail folding (step.fold, in the whole step) and what the run records besides the
/// result (the ports' time series). The caller (`stepsim run`) loads and checks the input,
/// shows progress and writes the outputs.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

/// How the step of a scenario runs, for its caller to set up around it.
struct StepExecution {
  /// Every GPU's schedule on one engine run (step.mode whole at packet or cell fidelity); else
  /// the memoized executor (one pipeline, each distinct collective on its own engine run).
  bool whole = false;
  /// Whole step only: --fault, --pcie-fault, --slow-gpu and --background apply, the run can
  /// record the ports' time series (StepRequest::samples), and its progress is the network's.
  [[nodiscard]] bool timed_events() const { return whole; }
  /// The partitioner "auto" means: cyclic for the whole step (every group is busy at once, so
  /// spreading LPs evenly balances the ranks), METIS for the short runs of single collectives.
  [[nodiscard]] const char* auto_partitioner() const { return whole ? "spread" : "metis"; }
};
[[nodiscard]] StepExecution step_execution(const Scenario& s);

/// What a step run needs besides the scenario and the topology.
struct StepRequest {
  /// The engine runs of single collectives (memoized mode; the whole step's collectives inside
  /// a server): they run to their end.
  pdes::EngineOptions engine;
  /// The whole step's one engine run (its `end` is at most the scenario's).
  pdes::EngineOptions step_engine;
  /// Memoized mode: called after each pass with the simulated time; false stops the step.
  std::function<bool(double)> on_pass;
  /// Whole step: the ports' time series (drained by step_engine.at_window); may be null.
  fabric::FabricSamples* samples = nullptr;
  /// Whole step with step.fold none: told before the engine starts that step.fold rails would
  /// fold this many rails (> 1); may be empty.
  std::function<void(std::uint32_t)> foldable;
  /// Background traffic without an end of its own (`--background P@R`) lasts until this.
  SimTime background_until = SimTime::never();
  /// Whole step, `run --trace`: the GPUs record their ops and their collectives' GPUs for the
  /// trace (StepResult::trace_gpus); `trace_gpus` (the topology's GPUs, each in a job) selects
  /// them, empty: each job's reference pipeline (one GPU per stage, the GPUs of /ops).
  bool trace = false;
  std::vector<std::uint32_t> trace_gpus;
  /// The ideal-fidelity comm model, reused when the scenario's fidelity is ideal (may be null:
  /// one is made).
  std::unique_ptr<CommModel> ideal;
};

/// The comm model of `s`'s fidelity: packet or cell (each collective on its own engine run with
/// `engine`), analytical, or ideal (`ideal` when given).
/// The model keeps references to `topo` and `s`: both must outlive it.
std::unique_ptr<CommModel> fidelity_comm_model(const topology::Topology& topo, const Scenario& s,
                                               pdes::Sync& sync, const pdes::EngineOptions& engine,
                                               std::unique_ptr<CommModel> ideal = nullptr);

/// Runs the step of `s` (validated, with its jobs, faults and background) on `topo`, with the
/// executor step_execution(s) names. Collective over `sync`.
Result<StepResult> simulate_step(const Scenario& s, const topology::Topology& topo,
                                 pdes::Sync& sync, StepRequest req);

}  // namespace stepsim::workload
