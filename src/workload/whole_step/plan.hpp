#pragma once
// The whole step's plan (see whole_step.hpp): what every GPU runs and with whom, decided before
// the engine starts and read-only while it runs. A value built with no engine (make_plan): the
// jobs and where their ranks sit, the reference groups and their copies (communicators), the
// pipeline sends, the RC connections, background traffic, the folded collectives' costs and
// step.fold rails. The runtime (runtime.hpp) runs over a const plan.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/stage_program.hpp"

namespace stepsim::workload::whole_step {

using topology::NodeId;
using topology::PortId;
constexpr std::uint32_t kNone32 = 0xffffffffu;
/// Connections that carry background traffic, not a communicator's.
constexpr std::uint32_t kBackgroundComm = 0xfffffffeu;

inline std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

/// The stream of a GPU a collective runs on (kNone: an asynchronous pipeline send).
enum class Stream : std::uint8_t { kCompute, kDp, kNone };

/// A group of a job's reference pipeline on one stage and stream; its copies are communicators.
struct RefGroup {
  std::uint32_t job = 0;
  int stage = 0;
  Stream stream = Stream::kCompute;
  std::vector<std::uint32_t> gpus;   // the job's ranks
  std::vector<std::uint32_t> ops;    // the comm op (of the stage program) of each sequence number
  std::vector<std::uint32_t> comms;  // by GPU of the stage (index in the stage): its copy
};

/// One job of the run: its scenario, where its ranks sit, its stage programs and groups. A job's
/// ranks are its own (0 .. world - 1, Placement's order); everything else in the run uses the
/// topology's GPU indices (`gpus` maps). One job alone: rank r is GPU r.
struct JobPlan {
  Scenario s;                       // the job's (job_scenario, or the scenario itself)
  std::vector<std::uint32_t> gpus;  // by rank: the topology's GPU
  Placement place;
  std::vector<StageProgram> progs;
  int per_stage = 1;
  std::int64_t send_bytes = 0;
  std::vector<std::vector<std::uint32_t>> stage_refs;      // by stage: RefGroup ids
  std::vector<std::vector<std::uint32_t>> stage_op_ref;    // by stage, comm op: RefGroup id
  std::vector<std::vector<std::uint32_t>> stage_op_local;  // by stage, comm op: GPU's counter
  std::map<std::pair<Stream, std::vector<std::uint32_t>>, std::uint32_t> ref_index;
  /// The topology's GPU of rank (t, c, d) of `stage`'s reference copy, i-th of its stage.
  [[nodiscard]] std::uint32_t gpu(int stage, int i) const {
    return gpus[idx(stage * per_stage + i)];
  }
};

/// A communicator of the job: its GPUs, where they are, its RC connections.
struct CommInfo {
  std::vector<std::uint32_t> gpus;  // the topology's
  std::uint32_t job = 0;
  collective::Communicator comm;
  bool folded = false;          // every GPU in one server
  int stage = 0;                // of the first GPU
  std::uint32_t ref = kNone32;  // its RefGroup, or kNone32 for a pipeline send
  std::int64_t send_bytes = 0;  // a pipeline send's size
  std::uint32_t instances = 0;  // collectives it runs in the step
  // step.fold rails: every GPU is a mirror (it never runs); `rep` is its rail-0 copy, whose
  // records it takes.
  bool mirror = false;
  std::uint32_t rep = kNone32;
  std::uint64_t record_base = 0;  // its first collective's record
  // Members by server (sorted by server): communicator ranks.
  std::vector<std::pair<NodeId, std::vector<std::uint32_t>>> local;
  std::map<std::pair<PortId, PortId>, std::vector<std::uint32_t>> pool;  // (a, b) -> connections
  [[nodiscard]] const std::vector<std::uint32_t>* ranks_on(NodeId server) const;
};

/// A GPU of the topology in the plan: the job rank it runs and where.
struct GpuPlan {
  std::uint32_t gpu = 0;  // the topology's index
  std::uint32_t job = 0;
  std::uint32_t rank = 0;  // in its job
  bool used = false;       // runs a job
  int stage = 0;
  int t = 0, c = 0, d = 0;
  NodeId server = 0;
  bool reference = false;  // records its ops (the reference pipeline)
  // Scenario::trace: shown in the Perfetto trace (`traced`); records its ops for it
  // (`trace_source`: a traced GPU that runs, or the rail-0 GPU a traced mirror copies).
  bool traced = false;
  bool trace_source = false;
  // step.fold rails: the rail-0 GPU of its server, whose clocks it takes (it never runs).
  std::uint32_t mirror = kNone32;
  double slowdown = 1.0;  // a straggler's compute factor
  /// Records its ops: for /ops or for the trace.
  [[nodiscard]] bool records() const { return reference || trace_source; }
};

/// A server that runs anything: the GPUs that run there and the background flows it sends.
struct ServerPlan {
  std::vector<std::uint32_t> gpus;        // GpuPlan indices (mirrors excluded)
  std::vector<std::uint32_t> background;  // background flows sent from this server
};

/// One background flow: a connection that writes messages at a rate until a time.
struct BackgroundFlow {
  std::uint32_t connection = 0;
  SimTime gap;    // between message posts
  SimTime until;  // no post at or after this
};

/// The whole plan. Indices: GPUs by the topology's GPU index (up to the last one a job uses),
/// servers by `server_index`, communicators and connections by their order of creation.
struct StepPlan {
  std::vector<JobPlan> jobs;
  collective::Communicator all;  // GPUs 0 .. the last a job uses: server, local index, NIC
  std::vector<GpuPlan> gpus;
  std::vector<std::int32_t> server_index;  // by node: ServerPlan index, -1 if none
  std::vector<ServerPlan> servers;
  std::vector<std::uint32_t> gpu_of_nic;  // by port: the first GPU on that NIC (rail)
  std::vector<RefGroup> refs;
  std::vector<CommInfo> comms;
  std::map<std::vector<std::uint32_t>, std::uint32_t> comm_index;  // (for ref copies)
  // Pipeline sends: (sender GPU, pass kind, chunk, receiving stage) -> communicator.
  std::map<std::tuple<std::uint32_t, int, std::uint32_t, int>, std::uint32_t> pp_comm;
  std::vector<nic::Connection> conns;
  std::vector<std::uint32_t> conn_comm;  // by connection: its communicator (or kBackgroundComm)
  std::vector<collective::CollectiveParams> params;
  std::map<std::tuple<std::uint32_t, int, std::int64_t>, std::size_t> params_of;  // -> params
  // Folded collectives' costs by (job, kind, bytes, GPUs).
  std::map<std::tuple<std::uint32_t, int, std::int64_t, std::size_t>, CommCost> folded;
  std::vector<BackgroundFlow> background;
  std::uint64_t records = 0;   // collective records (every communicator's instances)
  std::uint32_t rails = 1;     // step.fold rails: the rails one simulated rail stands for
  std::uint32_t foldable = 1;  // step.fold none: the rails step.fold rails would fold

  /// The op behind instance (comm, seq).
  [[nodiscard]] CommOp op_of(std::uint32_t comm, std::uint32_t seq) const;
  /// The communicator GPU `g` runs comm op `op` of its stage program on.
  [[nodiscard]] std::uint32_t comm_of(const GpuPlan& g, std::uint32_t op) const;
  /// The pipeline send of `src` (pass kind, chunk) to `dst_stage`.
  [[nodiscard]] std::uint32_t pipeline_comm(std::uint32_t src, PassKind kind, std::uint32_t chunk,
                                            int dst_stage) const;
  /// The collective parameters communicator `comm` runs (kind, bytes) with.
  [[nodiscard]] const collective::CollectiveParams& params_at(std::uint32_t comm,
                                                              collective::Kind kind,
                                                              std::int64_t bytes) const;
  /// The memoized cost of a folded collective of `job`.
  [[nodiscard]] const CommCost& folded_cost(std::uint32_t job, collective::Kind kind,
                                            std::int64_t bytes, std::size_t members) const;
  [[nodiscard]] const JobPlan& job_of(const GpuPlan& g) const { return jobs[g.job]; }
};

/// The plan of the whole step of `s` (validated) on `topo`: `folded` costs the collectives
/// inside one server, by job (see run_whole_step_trace). The only engine runs are the folded
/// models' own (an analytical or ideal model runs none). step.fold rails: refused with the
/// reason when the rails would differ.
Result<StepPlan> make_plan(const Scenario& s, const topology::Topology& topo,
                           const std::vector<CommModel*>& folded);

/// The Perfetto trace's GPUs (GpuPlan::traced): `gpus` (those a job runs), or with none each
/// job's reference pipeline. Each records its ops (GpuPlan::trace_source), a step.fold mirror
/// through the rail-0 GPU it copies.
void select_traced(const std::vector<std::uint32_t>& gpus, StepPlan& p);

}  // namespace stepsim::workload::whole_step
