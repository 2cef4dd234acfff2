#pragma once
/// What the step's writers (step_h5.hpp, chrome_trace.hpp) receive: plain rows, one struct per
/// table of the HDF5 file (schema in docs/hdf5-schema.md), and the step's summary figures. The
/// workload fills them from its result (workload/step_output.hpp); the writers know no workload
/// type. The packed rows are the tables' rows byte for byte (no padding, so the file's compound
/// type is the memory's).

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stepsim/collective/collective.hpp"

namespace stepsim::output {

/// Communication groups of the schema (tp, cp, ep, pp, dp): the `group` codes and the columns of
/// exposed time by group.
inline constexpr std::size_t kGroups = 5;

/// The /ops `kind` codes.
enum class OpCode : std::uint16_t {
  kForward = 0,
  kBackward = 1,
  kOptimizer = 2,
  kComm = 3,  ///< a blocking collective
  kWait = 4,  ///< waiting for another stage
};

#pragma pack(push, 1)
/// A row of /ops: one op on a GPU's compute stream.
struct OpsRow {
  double start_s = 0, end_s = 0;
  std::uint32_t gpu = 0;  ///< the GPU its stage runs on
  std::uint32_t stage = 0, micro = 0, chunk = 0, layer = 0;
  std::uint16_t kind = 0;   ///< OpCode
  std::uint16_t group = 0;  ///< of a kComm op: index into StepRows::group_names
  std::uint32_t job = 0;    ///< the /jobs row (0 for one job)
};

/// A row of /collectives: one collective of the step as it ran.
struct CollectivesRow {
  double start_s = 0, end_s = 0, busbw_gbs = 0;
  std::int64_t bytes = 0;  ///< nccl-tests' S
  std::uint32_t id = 0, stage = 0, gpus = 0;
  std::uint16_t group = 0;  ///< index into StepRows::group_names
  std::uint16_t kind = 0;   ///< collective::Kind
  std::uint32_t job = 0;
};

/// A row of /flows: one collective's traffic over one connection direction; the counter and time
/// columns are ConnectionFlow's declared statistics.
struct FlowsRow {
  collective::ConnectionFlow c;
  std::uint32_t collective = 0;  ///< the /collectives row
  std::uint32_t repeats = 0;     ///< how many collectives of the step it stands for
  std::uint32_t stage = 0;       ///< its collective's stage
  std::uint32_t src_nic = 0, dst_nic = 0, src_gpu = 0, dst_gpu = 0;
  std::uint16_t group = 0, kind = 0;
  std::uint32_t job = 0;
};
#pragma pack(pop)

/// A row of /links: one sending port over the whole step.
struct LinksRow {
  double bytes = 0, packets = 0, ecn_marks = 0, pause_sent = 0, drops = 0;
  double busy_s = 0, paused_s = 0;
  std::uint32_t port = 0, node = 0, link = 0;
  std::uint32_t tier = 0;  ///< of the sending node: 0 server, 1 leaf, 2 spine, 3 core
};

/// A row of /jobs: one job of a multi-job run.
struct JobsRow {
  std::string name;
  std::string gpus_text;                 ///< its GPUs as the scenario gives them
  std::uint32_t gpus = 0;                ///< how many
  std::vector<std::uint32_t> stage_gpu;  ///< by stage: the GPU of its simulated pipeline
  double step_s = 0, mfu = 0, model_flops = 0, tokens_per_step = 0;
  double compute_s = 0, bubble_s = 0, optimizer_s = 0;
  std::array<double, kGroups> exposed_s{};  ///< by group, of its critical stage
  std::uint32_t critical_stage = 0;
};

/// The step's figures /meta records.
struct StepFigures {
  std::string status;  ///< complete, interrupted, failed_transfers or stopped_at_end
  bool complete = true;
  double step_s = 0, mfu = 0, model_flops = 0, peak_flops = 0;
  std::uint32_t critical_stage = 0;
  double compute_s = 0, bubble_s = 0, optimizer_s = 0;
  std::array<double, kGroups> exposed_s{};  ///< by group: comm the compute stream waited for
  std::uint64_t events = 0, digest = 0, messages = 0, retransmissions = 0;
  double cct_p50_us = 0, cct_p99_us = 0, cct_max_us = 0;
  double fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;
  std::uint32_t folded_rails = 1;
  std::uint64_t flow_rows_total = 0;  ///< flow rows before output.flows selected
  std::uint32_t flows_sample = 1;     ///< output.flows: 1 all, K 1 in K collectives, 0 none
};

/// The whole step's GPUs in the Perfetto trace (chrome_trace.hpp): not in the HDF5 file.
struct GpuTraceRows {
  /// A GPU the trace shows: the job and stage it runs.
  struct Gpu {
    std::uint32_t gpu = 0, job = 0, stage = 0;
  };
  std::vector<Gpu> gpus;    ///< ascending; empty: the memoized step's trace (one GPU per stage)
  std::vector<OpsRow> ops;  ///< their ops, GPU by GPU (OpsRow::gpu the traced GPU)
  /// By /collectives row: the GPUs it ran on, member_sets[coll_members[row]] (kNoMemberSet:
  /// unknown).
  std::vector<std::uint32_t> coll_members;
  std::vector<std::vector<std::uint32_t>> member_sets;
  static constexpr std::uint32_t kNoMemberSet = 0xffffffffu;
};

/// A table's rows made on demand instead of held: fill(first, n, out) writes rows first... (n of
/// them) to `out`; it may run on several threads at once, on different rows.
template <class Row>
struct RowFill {
  std::size_t rows = 0;
  std::function<void(std::size_t first, std::size_t n, Row* out)> fill;
};

/// The step, as the writers receive it.
struct StepRows {
  StepFigures figures;
  std::vector<OpsRow> ops;
  std::vector<CollectivesRow> colls;
  /// Without ops and colls (then empty): their rows made as the HDF5 writer compresses them, not
  /// copied into memory first (the Perfetto trace needs ops and colls).
  RowFill<OpsRow> ops_fill;
  RowFill<CollectivesRow> colls_fill;
  std::vector<FlowsRow> flows;
  std::vector<LinksRow> links;
  std::vector<JobsRow> jobs;  ///< empty for one job
  GpuTraceRows gpu_trace;     ///< the whole step's traced GPUs (empty otherwise)
  /// Names of the codes the rows hold: by group (kGroups: tp, cp, ...) and by OpCode (forward,
  /// ...).
  std::vector<std::string> group_names, op_names;
};

}  // namespace stepsim::output
