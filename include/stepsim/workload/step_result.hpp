#pragma once
/// What a step run reports: the op timeline, every collective as it ran, the flows and links
/// the packet runs saw, and the summary (step time, MFU, where the time went). The HDF5 file
/// (output/step_h5), `stepsim run`'s text and JSON and the Perfetto trace read these.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/workload/comm_model.hpp"

namespace stepsim::workload {

/// What an op on a GPU's compute stream does. The values are the HDF5 /ops `kind` column.
enum class OpKind : std::uint8_t {
  kForward = 0,
  kBackward = 1,
  kOptimizer = 2,
  kComm = 3,  ///< a blocking collective
  kWait = 4,  ///< waiting for another stage (pipeline fill, drain, sends)
};
inline constexpr int kOpKinds = 5;
/// "forward", "backward", "optimizer", "comm", "wait".
const char* op_kind_name(OpKind k);

/// One op on a GPU's compute stream, as the timeline shows it.
struct OpRecord {
  std::uint32_t job = 0;  ///< of a multi-job scenario (Scenario::jobs); 0 otherwise
  std::uint32_t stage = 0;
  OpKind kind = OpKind::kForward;
  CommGroup group = CommGroup::kTp;  ///< of a kComm op
  std::uint32_t micro = 0;           ///< micro-batch
  std::uint32_t chunk = 0;           ///< model chunk (virtual stage)
  std::uint32_t layer = 0;
  double start_s = 0;
  double end_s = 0;
  std::uint32_t gpu = 0;  ///< whole step: the topology's GPU it ran on (memoized: 0)
};

/// CollectiveRecord::members of a record without its GPUs (the memoized step's: its stage's).
inline constexpr std::uint32_t kNoMembers = 0xffffffffu;

/// One collective of the step as it ran.
struct CollectiveRecord {
  std::uint32_t id = 0;
  std::uint32_t job = 0;  ///< of a multi-job scenario (Scenario::jobs); 0 otherwise
  std::uint32_t stage = 0;
  CommGroup group = CommGroup::kTp;
  collective::Kind kind = collective::Kind::kAllReduce;
  std::int64_t bytes = 0;
  std::uint32_t gpus = 0;
  /// Whole step: the GPUs it ran on, StepResult::member_sets[members] (its communicator's);
  /// kNoMembers in the memoized step (one GPU per stage ran). (In the padding before start_s.)
  std::uint32_t members = kNoMembers;
  double start_s = 0;
  double end_s = 0;
  double busbw_gbs = 0;
};

/// A flow: one collective's traffic over one RDMA connection direction (src NIC to dst NIC).
/// Memoized packet/cell mode: one row per connection of each distinct collective, standing for
/// every repetition (`repeats`), with the first repetition's times. Whole-step mode: one row per
/// collective instance and connection direction (`repeats` 1), with its own times.
struct FlowRow {
  std::uint32_t collective = 0;  ///< the CollectiveRecord (memoized: its first occurrence)
  std::uint32_t job = 0;         ///< the collective's job (Scenario::jobs); 0 for one job
  std::uint32_t repeats = 0;     ///< how many collectives of the step it stands for
  std::uint32_t src_nic = 0;     ///< global port ids
  std::uint32_t dst_nic = 0;
  std::uint32_t src_gpu = 0;  ///< global GPU index of the GPU whose NIC (rail) sends
  std::uint32_t dst_gpu = 0;  ///< global GPU index of the GPU whose NIC receives
  CommGroup group = CommGroup::kTp;
  collective::Kind kind = collective::Kind::kAllReduce;
  std::uint64_t bytes = 0;  ///< payload bytes of one repetition
  std::uint64_t messages = 0;
  std::uint64_t packets = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t ecn_marked = 0;
  std::int64_t start_ps = -1;       ///< first post (step time); -1: unknown
  std::int64_t first_byte_ps = -1;  ///< first packet of the flow on the wire
  std::int64_t end_ps = -1;         ///< last send completion
};

/// One direction of a link (its sending port) over the whole step: each distinct collective's
/// counters times its repetitions.
struct LinkRow {
  std::uint32_t port = 0;  ///< global port id (the sender)
  std::uint32_t node = 0;
  std::uint32_t link = 0;
  std::uint32_t tier = 0;  ///< of the sending node: 0 server, 1 leaf, 2 spine, 3 core
  double bytes = 0;
  double packets = 0;
  double ecn_marks = 0;
  double pause_sent = 0;
  double drops = 0;
  double busy_s = 0;    ///< time spent serializing
  double paused_s = 0;  ///< time the port was paused by PFC
};

/// One job of a multi-job run (Scenario::jobs): its own step, as StepResult gives it for one.
struct JobResult {
  std::string name;
  std::string gpus_text;                 ///< its GPUs of the topology, as the scenario gives them
  std::uint32_t gpus = 0;                ///< how many
  std::vector<std::uint32_t> stage_gpu;  ///< by stage: the GPU of its simulated pipeline
  double step_s = 0;                     ///< when its last stage finished (all jobs start at 0)
  double model_flops = 0;
  double tokens_per_step = 0;
  double mfu = 0;
  double peak_flops = 0;
  std::uint32_t critical_stage = 0;
  double compute_s = 0;
  double exposed_s[kCommGroups] = {0, 0, 0, 0, 0};
  double bubble_s = 0;
  double optimizer_s = 0;
  std::uint64_t collectives = 0;  ///< of its step, every group
};

struct StepResult {
  /// A multi-job run (Scenario::jobs): each job's step; the fields below are then the run's:
  /// step_s the last job's end, the split that job's (`critical_job`), model_flops the jobs'
  /// sum and mfu their GPU-weighted MFU over step_s. Empty for one job.
  std::vector<JobResult> jobs;
  std::uint32_t critical_job = 0;
  double step_s = 0;
  double model_flops = 0;  ///< per step, ModelSpec::model_flops_per_token x tokens
  double mfu = 0;
  double peak_flops = 0;
  std::uint32_t critical_stage = 0;  ///< the stage that finished last
  // The critical stage's time, which adds up to step_s:
  double compute_s = 0;                             ///< forward, backward, recompute
  double exposed_s[kCommGroups] = {0, 0, 0, 0, 0};  ///< comm the compute stream waited for
  double ep_hidden_s = 0;  ///< moe.overlap: EP communication hidden behind another pass
  double bubble_s = 0;     ///< waiting for other stages (pipeline fill, drain, sends)
  double optimizer_s = 0;  ///< the optimizer step
  // Every collective of the step, by group: count, mean busbw, bytes.
  std::uint64_t collectives[kCommGroups] = {0, 0, 0, 0, 0};
  double busbw_gbs[kCommGroups] = {0, 0, 0, 0, 0};
  double comm_bytes[kCommGroups] = {0, 0, 0, 0, 0};
  // Packet fidelity, summed over the distinct collectives simulated.
  std::uint64_t distinct_collectives = 0;
  std::uint64_t drops = 0;
  std::uint64_t retransmissions = 0;
  double paused_s = 0;
  std::uint64_t events = 0;
  nic::EngineTally engine;
  /// Network groups' collectives (all of them): completion-time percentiles.
  double cct_p50_us = 0, cct_p99_us = 0, cct_max_us = 0;
  /// Packet fidelity: RDMA messages' completion times (post to send completion) over the step
  /// (each distinct collective's messages times its repetitions), to the histogram's 9% bins.
  double fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;
  std::uint64_t messages = 0;
  std::uint64_t digest = 0;
  bool complete = true;      ///< false: stopped at `end` or interrupted
  bool interrupted = false;  ///< stopped by a signal (SIGINT/SIGTERM)
  /// RDMA transfers that failed (retry limit exceeded, e.g. a link down longer than the
  /// transport retries): the step stopped where GPUs waited on them (complete = false).
  std::uint64_t failed_transfers = 0;
  /// step.fold rails: the rails each simulated rail stands for (1: every GPU ran). The fabric's
  /// numbers, flows and message times are then rail 0's plane only.
  std::uint32_t folded_rails = 1;
  /// step.fold none: the rails `step.fold: rails` would fold (1: it would refuse).
  std::uint32_t foldable_rails = 1;
  /// Background traffic asked to last past the step: the step's end, where it stopped (s);
  /// -1 otherwise.
  double background_cut_s = -1;
  std::vector<OpRecord> ops;
  std::vector<CollectiveRecord> colls;
  /// Whole step: the GPU lists CollectiveRecord::members points into (by communicator).
  std::vector<std::vector<std::uint32_t>> member_sets;
  /// Whole step with Scenario::trace: the GPUs the trace shows (ascending) and their ops, GPU
  /// by GPU in the order they ran (OpRecord::gpu the traced GPU; a step.fold mirror's are the
  /// rail-0 GPU's it copies).
  std::vector<std::uint32_t> trace_gpus;
  std::vector<OpRecord> trace_ops;
  std::vector<FlowRow> flows;         ///< packet fidelity, as output.flows selects them
  std::uint64_t flow_rows_total = 0;  ///< flow rows before output.flows selected
  /// Which rows `flows` keeps: 1 all, K every row of 1 in K collectives (flow_row_sampled), 0 none.
  std::uint32_t flows_sample = 1;
  std::vector<LinkRow> links;  ///< packet fidelity: ports that carried anything
};

}  // namespace stepsim::workload
