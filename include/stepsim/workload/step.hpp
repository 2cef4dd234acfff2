#pragma once
/// One training step: the per-GPU graph of ops (forward and backward per layer and micro-batch
/// under the 1F1B or interleaved pipeline schedule, TP / EP / CP collectives per layer, pipeline
/// sends, data-parallel gradient reduction in buckets overlapped with the last backward,
/// parameter all-gathers, the optimizer), executed on the GPUs of one pipeline. Data-parallel
/// replicas and TP ranks are symmetric, so the pipeline of global rank 0 is simulated, one GPU
/// per stage; its collectives run on the groups they belong to in the cluster (see CommModel).
///
/// The pieces, one file each (docs/workload.md): comm_model.hpp (the fidelities),
/// compute_cost.hpp (the roofline), pipeline_schedule.hpp (the pass order), layer_comm.hpp (a
/// layer's collectives), placement.hpp, step_result.hpp (what is reported) and
/// step_summary.hpp (the trace an executor leaves and its reduction).

#include <functional>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

/// Runs the step of `s` on `topo` with `comm` for the collectives. `s` must have passed
/// validate(). `progress` (may be null) is called after each pass with the simulated time; when
/// it returns false, or a packet run is stopped by a signal, the result holds what was done
/// (complete = false, interrupted = true).
Result<StepResult> run_step(const Scenario& s, const topology::Topology& topo, CommModel& comm,
                            const std::function<bool(double)>& progress = {});

/// run_step without the op and collective records: StepResult::ops and ::colls are empty, and
/// so is what is reduced from them (bus bandwidths and latencies by group, flow rows); the step
/// time, its split, MFU and the digest are run_step's. For scoring many layouts (`stepsim plan`).
Result<StepResult> run_step_totals(const Scenario& s, const topology::Topology& topo,
                                   CommModel& comm);

/// The whole step as one simulation (`step.mode: whole`, packet or cell fidelity): every GPU of
/// the job (of every job of `s.jobs`) runs its stage's schedule on the PDES and all collectives
/// share the NICs, NVLink and fabric (src/workload/whole_step/whole_step.hpp says how). `folded`
/// (the packet comm model of the same fidelity; by job with `s.jobs`, of job_scenario) costs the
/// collectives inside one server. `progress` gets the simulated time at the engine's progress
/// reports (rank 0); false stops the run. `samples` (optional) records the ports' time series
/// (drained by engine.at_window). `foldable` (optional) hears, before the engine starts, that
/// `step.fold: rails` would fold this many rails (StepResult::foldable_rails, known early).
/// `trace_gpus` (optional) asks for the Perfetto trace's GPUs (StepRequest::trace_gpus; empty:
/// the reference pipelines). Collective over `sync`.
Result<StepResult> run_whole_step(const Scenario& s, const topology::Topology& topo,
                                  const std::vector<CommModel*>& folded, pdes::Sync& sync,
                                  pdes::EngineOptions engine,
                                  const std::function<bool(double)>& progress = {},
                                  fabric::FabricSamples* samples = nullptr,
                                  const std::function<void(std::uint32_t)>& foldable = {},
                                  const std::vector<std::uint32_t>* trace_gpus = nullptr);

}  // namespace stepsim::workload
