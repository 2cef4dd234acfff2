#pragma once
/// The contract between a step executor and the report: the trace an executor leaves (each
/// stage's clocks, the op and collective records, the distinct collectives with their costs)
/// and the one reduction of it into a StepResult (critical stage, time split, busbw per group,
/// MFU, completion-time percentiles, flows, links, digest). Any executor feeds the same summary.

#include <cstdint>
#include <vector>

#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

/// One stage's compute stream at the end of the run: its clock and where its time went.
struct StageTime {
  double t = 0;  ///< when the stream finished (or stopped)
  double compute = 0;
  double bubble = 0;
  double optimizer = 0;
  double exposed[kCommGroups] = {0, 0, 0, 0, 0};
  double ep_hidden = 0;  ///< moe.overlap: EP communication hidden behind another pass
};

/// A distinct collective (kind, size, GPUs) of the step: the record that first ran it, how many
/// of the step's collectives it stands for, and its cost.
struct DistinctCollective {
  std::uint32_t first = 0;
  std::uint32_t repeats = 0;
  CommCost cost;
};

/// Why a step ended.
enum class StepStop : std::uint8_t {
  kDone,         ///< every stage ran its schedule and its optimizer
  kEnd,          ///< a stage passed the scenario's `end`
  kInterrupted,  ///< a signal (SIGINT/SIGTERM) or the progress callback stopped it
  kFailed,       ///< RDMA transfers failed (retry limit exceeded): GPUs waiting on them stopped
};

/// What an executor leaves for the summary.
struct StepTrace {
  std::vector<StageTime> stages;
  /// A multi-job run (Scenario::jobs): each job's number of stages; `stages` holds the jobs'
  /// stages in turn. Empty for one job.
  std::vector<std::uint32_t> job_stages;
  std::vector<OpRecord> ops;
  std::vector<CollectiveRecord> colls;                  ///< in the order they ran; id = index
  std::vector<std::vector<std::uint32_t>> member_sets;  ///< as StepResult's
  std::vector<std::uint32_t> trace_gpus;                ///< as StepResult's
  std::vector<OpRecord> trace_ops;                      ///< as StepResult's
  std::vector<DistinctCollective> distinct;             ///< in the order they first ran
  /// Flows with their own times (the whole-step run), in addition to the distinct collectives'.
  std::vector<FlowRow> flows;
  StepStop stop = StepStop::kDone;
  std::uint64_t failed_transfers = 0;  ///< completions in error (kFailed)
  std::uint32_t folded_rails = 1;      ///< step.fold rails: rails one simulated rail stands for
  std::uint32_t foldable_rails = 1;    ///< step.fold none: the rails step.fold rails would fold
};

/// output.flows sampled: whether the flows of collective `collective` (its /collectives id) are
/// kept, 1 in `k` collectives by a hash of the id (the same on every rank and run; k <= 1: all).
bool flow_row_sampled(std::uint32_t collective, int k);
/// Applies output.flows to r.flows (auto: all up to OutputParams::kAutoFlowRows rows, else
/// sampled) and records what it kept (flow_rows_total, flows_sample).
void select_flows(const OutputParams& out, StepResult& r);

/// Reduces `trace` into the step's result. The critical stage is the one that finished last
/// (the first of equals); its time split adds up to the step time. Sums run in the order the
/// collectives ran, so the result is the same wherever the executor ran.
StepResult summarize_step(const Scenario& s, const topology::Topology& topo, StepTrace trace);

}  // namespace stepsim::workload
