// The whole-step executor (see whole_step.hpp): the job's communicators and RC connections, every
// GPU's stage program as an RDMA application, one run over the fabric, and the trace.
#include "src/workload/whole_step.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "src/collective/algorithm_run.hpp"
#include "src/collective/timer_table.hpp"
#include "src/workload/memoized_comm.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/fabric/traffic.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/stat_reduce.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/stage_program.hpp"

namespace stepsim::workload {
namespace {

using topology::NodeId;
using topology::PortId;
constexpr std::uint32_t kNone32 = 0xffffffffu;

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

enum class Stream : std::uint8_t { kCompute, kDp, kNone };

// A group of a job's reference pipeline on one stage and stream; its copies are communicators.
struct RefGroup {
  std::uint32_t job = 0;
  int stage = 0;
  Stream stream = Stream::kCompute;
  std::vector<std::uint32_t> gpus;   // the job's ranks
  std::vector<std::uint32_t> ops;    // the comm op (of the stage program) of each sequence number
  std::vector<std::uint32_t> comms;  // by GPU of the stage (index in the stage): its copy
};

// One job of the run: its scenario, where its ranks sit, its stage programs and groups. A job's
// ranks are its own (0 .. world - 1, Placement's order); everything else in the run uses the
// topology's GPU indices (`gpus` maps). One job alone: rank r is GPU r.
struct JobRun {
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
  // The topology's GPU of rank (t, c, d) of `stage`'s reference copy, i-th of its stage.
  [[nodiscard]] std::uint32_t gpu(int stage, int i) const {
    return gpus[idx(stage * per_stage + i)];
  }
};

// A communicator of the job: its GPUs, where they are, its RC connections.
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
  [[nodiscard]] const std::vector<std::uint32_t>* ranks_on(NodeId server) const {
    auto it = std::lower_bound(local.begin(), local.end(), server,
                               [](const auto& e, NodeId s) { return e.first < s; });
    return it != local.end() && it->first == server ? &it->second : nullptr;
  }
};

// What a flow (one collective over one connection direction) did, on its sender's server.
struct FlowAgg {
  std::uint64_t bytes = 0, messages = 0, packets = 0, retransmitted = 0, ecn = 0;
  std::int64_t start = -1, first_byte = -1, end = -1;
};

void merge_flow(FlowRow& r, const FlowAgg& f) {
  r.bytes += f.bytes;
  r.messages += f.messages;
  r.packets += f.packets;
  r.retransmitted += f.retransmitted;
  r.ecn_marked += f.ecn;
  auto lo = [](std::int64_t& a, std::int64_t b) {
    if (b >= 0 && (a < 0 || b < a)) a = b;
  };
  lo(r.start_ps, f.start);
  lo(r.first_byte_ps, f.first_byte);
  r.end_ps = std::max(r.end_ps, f.end);
}

// Adds row `b` (the same flow, from another server) into `a`.
void merge_rows(FlowRow& a, const FlowRow& b) {
  FlowAgg f;
  f.bytes = b.bytes;
  f.messages = b.messages;
  f.packets = b.packets;
  f.retransmitted = b.retransmitted;
  f.ecn = b.ecn_marked;
  f.start = b.start_ps;
  f.first_byte = b.first_byte_ps;
  f.end = b.end_ps;
  merge_flow(a, f);
}

struct Waiter {
  std::uint32_t gpu = 0;   // global GPU
  std::uint32_t rank = 0;  // communicator rank
  Stream stream = Stream::kNone;
  bool done = false;
};

// One collective's part on one server.
struct Instance {
  std::uint32_t comm = 0;
  std::uint32_t seq = 0;
  std::unique_ptr<collective::CollectiveApp> app;                 // null when folded
  std::vector<std::uint32_t> to_global;                           // local connection -> global
  std::vector<std::pair<std::uint32_t, std::uint32_t>> to_local;  // (global, local), sorted
  std::vector<Waiter> waiters;                                    // the local members that arrived
  std::size_t members = 0;                                        // local members
  bool started = false;
  int pending_timers = 0;
  int outstanding = 0;  // signaled sends not completed
  std::size_t done = 0;
  std::vector<nic::Completion> deferred;  // arrived before the start
  std::vector<FlowAgg> flows;             // by local endpoint: what it sent (and ECN at receive)
  SimTime base_latency;                   // the protocol's
};

std::uint64_t key_of(std::uint32_t comm, std::uint32_t seq) {
  return (static_cast<std::uint64_t>(comm) << 32) | seq;
}

enum class TimerKind : std::uint8_t { kCompute, kStart, kInstance, kFolded, kMail, kBackground };
// Connections that carry background traffic, not a communicator's.
constexpr std::uint32_t kBackgroundComm = 0xfffffffeu;
struct Timer {
  TimerKind kind = TimerKind::kCompute;
  std::uint32_t gpu = 0;
  std::uint64_t key = 0;
  nic::AppTimer inner;  ///< kInstance: the collective's own timer
};

// Why a GPU's compute stream is not running.
enum class Wait : std::uint8_t { kRunning, kTimer, kCollective, kRecv, kDp, kDpAll, kDone };

struct GpuRun {
  std::uint32_t gpu = 0;  // the topology's index (gpus_'s)
  std::uint32_t job = 0;
  std::uint32_t rank = 0;  // in its job
  bool used = false;       // runs a job
  int stage = 0;
  int t = 0, c = 0, d = 0;
  NodeId server = 0;
  bool reference = false;  // records its ops (the reference pipeline)
  // step.fold rails: the rail-0 GPU of its server, whose clocks it takes (it never runs).
  std::uint32_t mirror = kNone32;
  double slowdown = 1.0;  // a straggler's compute factor
  std::uint32_t pc = 0;
  Wait wait = Wait::kRunning;
  SimTime since;
  std::uint32_t wait_arg = 0;
  CommGroup wait_group = CommGroup::kTp;
  std::vector<std::uint32_t> seq;  // by RefGroup of its stage (local index): next sequence
  std::uint32_t dp_released = 0;
  std::uint32_t dp_done = 0;
  bool dp_busy = false;
  bool gathers_released = false;
  // Accounting (ps): as StageTime.
  std::int64_t compute = 0, bubble = 0, optimizer = 0;
  std::array<std::int64_t, kCommGroups> exposed{};
  SimTime end = SimTime::never();
  SimTime opt_end;
  SimTime pass_start;
  std::int64_t first_fwd = -1;  // the first forward pass's length (hides the parameter gather)
  bool in_first_fwd = false;
};

// One GPU's clocks at the end of the run, gathered over the ranks by its declared statistics
// (core/stat_table.hpp, stat::allreduce): its server's rank fills it, the other ranks keep the
// defaults, which are the reductions' identities.
struct GpuClock {
  std::int64_t end_ps = -1;  // its program's end; -1: it did not finish
  std::int64_t compute_ps = 0;
  std::int64_t bubble_ps = 0;
  std::int64_t optimizer_ps = 0;
  std::int64_t exposed_tp_ps = 0;
  std::int64_t exposed_cp_ps = 0;
  std::int64_t exposed_ep_ps = 0;
  std::int64_t exposed_pp_ps = 0;
  std::int64_t exposed_dp_ps = 0;
  std::int64_t waiting_since_ps = -1;  // since when it waits (a GPU that did not finish)
};
constexpr auto stat_table(std::type_identity<GpuClock>) {
  using S = GpuClock;
  return std::array{stat::max("end_ps", "ps", &S::end_ps),
                    stat::sum("compute_ps", "ps", &S::compute_ps),
                    stat::sum("bubble_ps", "ps", &S::bubble_ps),
                    stat::sum("optimizer_ps", "ps", &S::optimizer_ps),
                    stat::sum("exposed_tp_ps", "ps", &S::exposed_tp_ps),
                    stat::sum("exposed_cp_ps", "ps", &S::exposed_cp_ps),
                    stat::sum("exposed_ep_ps", "ps", &S::exposed_ep_ps),
                    stat::sum("exposed_pp_ps", "ps", &S::exposed_pp_ps),
                    stat::sum("exposed_dp_ps", "ps", &S::exposed_dp_ps),
                    stat::max("waiting_since_ps", "ps", &S::waiting_since_ps)};
}
static_assert(sizeof(GpuClock) == stat::kCount<GpuClock> * sizeof(std::int64_t),
              "every member of GpuClock has its line in the table");
// The exposed members by CommGroup (comm_model.hpp's order).
constexpr std::array<std::int64_t GpuClock::*, kCommGroups> kExposedPs{
    &GpuClock::exposed_tp_ps, &GpuClock::exposed_cp_ps, &GpuClock::exposed_ep_ps,
    &GpuClock::exposed_pp_ps, &GpuClock::exposed_dp_ps};
static_assert(static_cast<int>(CommGroup::kTp) == 0 && static_cast<int>(CommGroup::kCp) == 1 &&
              static_cast<int>(CommGroup::kEp) == 2 && static_cast<int>(CommGroup::kPp) == 3 &&
              static_cast<int>(CommGroup::kDp) == 4);

struct ServerState {
  std::unordered_map<std::uint64_t, Instance> live;
  collective::TimerTable<Timer> timers{1};
  std::vector<std::uint32_t> gpus;  // GpuRun indices
  std::vector<OpRecord> ops;        // the reference GPUs' compute streams
  std::vector<FlowRow> flows;
  LogHistogram fct;
  std::map<std::uint64_t, SimTime> mail;          // folded pipeline sends: key -> data in
  std::map<std::uint64_t, std::uint32_t> reader;  // folded pipeline sends: key -> waiting GPU
  std::uint64_t orphans = 0;
  bool here = false;                      // this rank runs the server
  std::vector<std::uint32_t> background;  // background flows sent from this server
  std::uint64_t background_bytes = 0;     // completed background writes
  std::uint64_t failed = 0;               // completions in error
  std::uint64_t delivered = 0;            // collectives' bytes in completed sends (progress)
};

// One background flow: a connection that writes messages at a rate until a time.
struct BackgroundFlow {
  std::uint32_t connection = 0;
  SimTime gap;    // between message posts
  SimTime until;  // no post at or after this
};

class StepApp;

// The verbs one collective instance sees: its own connection numbers and timer tags, and the
// sequence number on everything it posts.
class InstanceVerbs final : public nic::Verbs {
 public:
  InstanceVerbs(nic::Verbs& v, StepApp& app, Instance& inst) : v_(v), app_(app), inst_(inst) {}
  [[nodiscard]] SimTime now() const override { return v_.now(); }
  [[nodiscard]] NodeId server() const override { return v_.server(); }
  bool post(std::uint32_t endpoint, const nic::WorkRequest& wr) override;
  std::size_t poll_cq(std::uint32_t /*endpoint*/, std::span<nic::Completion> /*out*/) override {
    fatal("whole step: a collective polled its CQ itself");
  }
  [[nodiscard]] nic::QpState state(std::uint32_t endpoint) const override {
    return v_.state(global(endpoint));
  }
  void schedule(SimTime delay, const nic::AppTimer& timer) override;
  void send_in_network(PortId /*nic*/, const fabric::Packet& /*pkt*/) override {
    fatal("whole step: in-network packets (SHARP) are not run in the whole step");
  }

 private:
  [[nodiscard]] std::uint32_t global(std::uint32_t endpoint) const {
    return inst_.to_global[endpoint / 2] * 2 + (endpoint & 1u);
  }
  nic::Verbs& v_;
  StepApp& app_;
  Instance& inst_;
};

class StepApp final : public nic::RdmaApp {
 public:
  StepApp(const Scenario& s, const topology::Topology& topo, std::vector<CommModel*> folded);

  Result<bool> setup();
  [[nodiscard]] const std::vector<nic::Connection>& connections() const { return conns_; }
  // step.fold none: the rails step.fold rails would fold (1: it could not).
  [[nodiscard]] std::uint32_t foldable() const { return foldable_; }
  // The bytes of the collectives' completed sends on this rank's servers (not background): each
  // GPU's bus bytes, as the progress display's work curve counts them. Read at a window boundary.
  [[nodiscard]] std::uint64_t delivered_bytes() const {
    std::uint64_t b = 0;
    for (const ServerState& ss : servers_) b += ss.delivered;
    return b * rails_;  // step.fold rails: rail 0's sends stand for every rail's
  }
  Result<StepTrace> collect(pdes::Sync& sync, nic::RdmaRun& run, bool stopped);

  void on_start(nic::Verbs& v) override;
  void on_cq(nic::Verbs& v, std::uint32_t endpoint) override;
  void on_timer(nic::Verbs& v, const nic::AppTimer& timer) override;

  // For InstanceVerbs.
  void schedule(nic::Verbs& v, SimTime delay, const Timer& t) {
    v.schedule(delay, server(v).timers.put(0, t));
  }

 private:
  ServerState& server(const nic::Verbs& v) { return servers_[idx(server_index_[v.server()])]; }
  [[nodiscard]] const JobRun& job_of(const GpuRun& g) const { return jobs_[g.job]; }

  // Set-up.
  void add_job(Scenario s, std::vector<std::uint32_t> gpus);
  Result<bool> place_gpus();
  std::uint32_t ref_group(std::uint32_t job, int stage, Stream stream, const CommOp& op);
  std::uint32_t add_comm(std::uint32_t job, std::vector<std::uint32_t> gpus);
  void build_ref_groups(std::uint32_t job);
  Result<bool> build_comms(std::uint32_t job);
  Result<bool> build_pipeline_comms(std::uint32_t job);
  Result<bool> build_connections();
  Result<const collective::CollectiveParams*> params_for(std::uint32_t comm, collective::Kind kind,
                                                         std::int64_t bytes);
  Result<bool> cost_folded();
  Result<bool> build_background();
  Result<bool> fold_rails();
  Result<bool> fold_comms();
  Result<bool> fold();

  // The op behind instance (comm, seq).
  [[nodiscard]] CommOp op_of(std::uint32_t comm, std::uint32_t seq) const;

  // Runtime.
  void advance(nic::Verbs& v, GpuRun& g);
  void compute(nic::Verbs& v, GpuRun& g, const StageOp& op, bool optimizer);
  void collective(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void pass_mark(GpuRun& g, const StageOp& op, SimTime now);
  void param_gather(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void record(ServerState& ss, const GpuRun& g, OpRecord r, SimTime start, SimTime end);
  void arrive(nic::Verbs& v, std::uint32_t comm, std::uint32_t seq, GpuRun* g, Stream stream);
  Instance& instance(ServerState& ss, std::uint32_t comm, std::uint32_t seq);
  void create_app(Instance& inst);
  void start_folded(nic::Verbs& v, Instance& inst);
  void deliver(nic::Verbs& v, Instance& inst, std::uint32_t local_ep, nic::Completion c);
  void check_done(nic::Verbs& v, std::uint64_t key);
  void member_done(nic::Verbs& v, const Waiter& w);
  void try_dp(nic::Verbs& v, GpuRun& g);
  void send(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void recv(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void retire(ServerState& ss, Instance& inst, SimTime now);
  void wake(nic::Verbs& v, GpuRun& g, SimTime now);
  std::uint32_t pipeline_comm(std::uint32_t src, PassKind kind, std::uint32_t chunk,
                              int dst_stage) const;

  // Gathering the trace (collect).
  Result<StepStop> collect_stages(pdes::Sync& sync, const nic::RdmaRun& run, bool stopped,
                                  StepTrace& trace);
  void collect_collectives(pdes::Sync& sync, StepTrace& trace) const;
  LogHistogram collect_records(pdes::Sync& sync, StepTrace& trace);

  const Scenario& s_;
  const topology::Topology& topo_;
  std::vector<CommModel*> folded_models_;  // by job
  std::vector<JobRun> jobs_;
  collective::Communicator all_;  // GPUs 0 .. the last a job uses: server, local index, NIC
  std::vector<RefGroup> refs_;
  std::vector<CommInfo> comms_;
  std::map<std::vector<std::uint32_t>, std::uint32_t> comm_index_;  // (for ref copies)
  std::map<std::tuple<std::uint32_t, int, std::uint32_t, int>, std::uint32_t> pp_comm_;
  std::vector<nic::Connection> conns_;
  std::vector<std::uint32_t> conn_comm_;  // by connection: its communicator
  std::deque<collective::CollectiveParams> params_;
  std::map<std::tuple<std::uint32_t, int, std::int64_t>, const collective::CollectiveParams*>
      params_of_;
  // Folded collectives' costs by (job, kind, bytes, GPUs).
  std::map<std::tuple<std::uint32_t, int, std::int64_t, std::size_t>, CommCost> folded_;
  std::uint64_t records_ = 0;
  std::unique_ptr<std::atomic<std::int64_t>[]> rec_start_, rec_end_;
  std::vector<GpuRun> gpus_;                // by GPU of the topology (up to the last one used)
  std::vector<SimTime> nvlink_free_;        // by GPU
  std::vector<std::int32_t> server_index_;  // by node: ServerState index, -1 if none
  std::vector<std::uint32_t> gpu_of_nic_;   // by port: the first GPU on that NIC (rail)
  std::vector<ServerState> servers_;
  std::vector<BackgroundFlow> background_;
  std::uint32_t rails_ = 1;     // step.fold rails: the rails one simulated rail stands for
  std::uint32_t foldable_ = 1;  // step.fold none: the rails step.fold rails would fold
  friend class InstanceVerbs;
};

bool InstanceVerbs::post(std::uint32_t endpoint, const nic::WorkRequest& wr) {
  nic::WorkRequest w = wr;
  w.wr_id = inst_.seq;
  w.imm = inst_.seq;
  if (w.signaled) ++inst_.outstanding;
  return v_.post(global(endpoint), w);
}

void InstanceVerbs::schedule(SimTime delay, const nic::AppTimer& timer) {
  ++inst_.pending_timers;
  app_.schedule(v_, delay, Timer{TimerKind::kInstance, 0, key_of(inst_.comm, inst_.seq), timer});
}

StepApp::StepApp(const Scenario& s, const topology::Topology& topo, std::vector<CommModel*> folded)
    : s_(s), topo_(topo), folded_models_(std::move(folded)) {}

void StepApp::add_job(Scenario s, std::vector<std::uint32_t> gpus) {
  JobRun j;
  j.place = Placement{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp};
  j.progs = stage_programs(s);
  j.per_stage = j.place.tp * j.place.cp * j.place.dp;
  j.send_bytes = stage_send_bytes(s);
  j.gpus = std::move(gpus);
  j.s = std::move(s);
  jobs_.push_back(std::move(j));
}

// Every job's GPUs: their coordinates, servers and server states (in the topology's GPU order).
Result<bool> StepApp::place_gpus() {
  std::uint32_t n = 0;
  for (const JobRun& j : jobs_) {
    for (std::uint32_t g : j.gpus) n = std::max(n, g + 1);
  }
  auto all = collective::make_communicator(topo_, static_cast<int>(n));
  if (!all) return all.error();
  all_ = std::move(all).value();
  nvlink_free_.assign(n, SimTime::zero());
  server_index_.assign(topo_.nodes.size(), -1);
  gpus_.resize(n);
  gpu_of_nic_ = collective::gpu_of_nic_ports(topo_);
  for (std::uint32_t k = 0; k < jobs_.size(); ++k) {
    const JobRun& j = jobs_[k];
    for (std::uint32_t rank = 0; rank < j.gpus.size(); ++rank) {
      GpuRun& r = gpus_[j.gpus[rank]];
      const RankCoords rc = coords_of(j.place, rank);
      r.gpu = j.gpus[rank];
      r.job = k;
      r.rank = rank;
      r.used = true;
      r.stage = rc.p;
      r.t = rc.t;
      r.c = rc.c;
      r.d = rc.d;
      r.server = all_.gpus[r.gpu].server;
      r.reference = rc.t == 0 && rc.c == 0 && rc.d == 0;
    }
  }
  for (GpuRun& r : gpus_) {
    if (!r.used) continue;
    if (server_index_[r.server] < 0) {
      server_index_[r.server] = static_cast<std::int32_t>(servers_.size());
      servers_.emplace_back();
    }
    servers_[idx(server_index_[r.server])].gpus.push_back(r.gpu);
  }
  for (const auto& [g, factor] : s_.slow_gpus) {
    if (g < n) gpus_[g].slowdown = factor;
  }
  return true;
}

// step.fold rails: on a rail-optimized fabric every rail is its own plane of switches, so a job
// whose network collectives each stay on one rail runs the same on every rail, up to each
// plane's own random draws (ECMP hashes, bit errors). Only rail 0's GPUs run; each other GPU
// mirrors the rail-0 GPU of its server. Refuses what makes the rails differ.
Error fold_refused(const std::string& why) {
  return Error{"step.fold rails: " + why + "; use step.fold none"};
}

Result<bool> StepApp::fold_rails() {
  if (jobs_.size() != 1) return fold_refused("several jobs share the fabric");
  if (!s_.background.empty()) return fold_refused("background traffic crosses the rails");
  if (!s_.slow_gpus.empty()) return fold_refused("a straggler (--slow-gpu) makes its rail differ");
  if (!s_.fabric.faults.empty()) return fold_refused("a link fault makes its plane differ");
  if (!s_.nic.pcie_faults.empty()) return fold_refused("a NIC fault makes its rail differ");
  if (topo_.generator != "rail_optimized") {
    return fold_refused("topology " + topo_.name + " (kind " + topo_.generator +
                        ") has no separate rail planes; it needs kind rail_optimized");
  }
  std::map<NodeId, std::uint32_t> rail0;  // server -> its rail-0 GPU
  std::map<PortId, std::uint32_t> nic_user;
  std::uint32_t rails = 1;
  for (const GpuRun& r : gpus_) {
    if (!r.used) continue;
    const collective::Gpu& g = all_.gpus[r.gpu];
    if (auto [it, fresh] = nic_user.emplace(g.nic, r.gpu); !fresh) {
      return fold_refused("GPUs " + std::to_string(it->second) + " and " + std::to_string(r.gpu) +
                          " share a NIC");
    }
    if (g.local == 0) rail0[g.server] = r.gpu;
    rails = std::max(rails, g.local + 1);
  }
  for (GpuRun& r : gpus_) {
    if (!r.used || all_.gpus[r.gpu].local == 0) continue;
    auto it = rail0.find(r.server);
    if (it == rail0.end() || gpus_[it->second].stage != r.stage || r.reference) {
      return fold_refused("GPU " + std::to_string(r.gpu) +
                          " has no rail-0 GPU of its stage in its server");
    }
    r.mirror = it->second;
  }
  rails_ = rails;
  return true;
}

// Folds the rails (step.fold rails: refused with the reason) or, with step.fold none, finds
// whether it could (foldable_, for the summary's hint) and leaves every GPU running.
Result<bool> StepApp::fold() {
  Result<bool> ok = fold_rails();
  if (ok) ok = fold_comms();
  if (s_.step_fold == "rails") {
    if (!ok) return ok;
    for (ServerState& ss : servers_) {  // mirrors never run
      std::erase_if(ss.gpus, [&](std::uint32_t g) { return gpus_[g].mirror != kNone32; });
    }
    return true;
  }
  foldable_ = ok ? rails_ : 1;
  for (GpuRun& r : gpus_) r.mirror = kNone32;
  for (CommInfo& c : comms_) {
    c.mirror = false;
    c.rep = kNone32;
  }
  rails_ = 1;
  return true;
}

// step.fold rails: every network communicator stays on one rail; those of the other rails are
// mirrors, each with its rail-0 copy (the same reference group's, or pipeline send's, on the
// rail-0 GPU of its first GPU's server), whose records it takes.
Result<bool> StepApp::fold_comms() {
  for (CommInfo& c : comms_) {
    const std::uint32_t rail = all_.gpus[c.gpus[0]].local;
    c.mirror = true;
    for (std::uint32_t g : c.gpus) {
      if (!c.folded && all_.gpus[g].local != rail) {
        return fold_refused("a network collective of stage " + std::to_string(c.stage) +
                            " joins GPUs of rails " + std::to_string(rail) + " and " +
                            std::to_string(all_.gpus[g].local));
      }
      c.mirror = c.mirror && gpus_[g].mirror != kNone32;
    }
    if (c.folded && c.ref == kNone32) return fold_refused("a pipeline send stays in a server");
    if (!c.mirror || c.ref == kNone32) continue;
    const GpuRun& m = gpus_[gpus_[c.gpus[0]].mirror];
    const JobRun& j = jobs_[c.job];
    c.rep = refs_[c.ref].comms[idx(static_cast<int>(m.rank) - m.stage * j.per_stage)];
  }
  for (const auto& [key, ci] : pp_comm_) {
    if (!comms_[ci].mirror) continue;
    auto k = key;
    std::get<0>(k) = gpus_[std::get<0>(key)].mirror;
    if (auto it = pp_comm_.find(k); it != pp_comm_.end()) comms_[ci].rep = it->second;
  }
  for (const CommInfo& c : comms_) {
    if (c.mirror &&
        (c.rep == kNone32 || comms_[c.rep].instances != c.instances || comms_[c.rep].mirror)) {
      return fold_refused("a collective of stage " + std::to_string(c.stage) +
                          " has no rail-0 copy");
    }
  }
  return true;
}

Result<bool> StepApp::setup() {
  if (s_.jobs.empty()) {
    std::vector<std::uint32_t> gpus(static_cast<std::size_t>(s_.par.world()));
    for (std::uint32_t g = 0; g < gpus.size(); ++g) gpus[g] = g;
    add_job(s_, std::move(gpus));
  }
  for (std::size_t k = 0; k < s_.jobs.size(); ++k) add_job(job_scenario(s_, k), s_.jobs[k].gpus);
  if (auto ok = place_gpus(); !ok) return ok;
  for (std::uint32_t k = 0; k < jobs_.size(); ++k) {
    if (auto ok = build_comms(k); !ok) return ok;
    if (auto ok = build_pipeline_comms(k); !ok) return ok;
  }
  if (auto ok = fold(); !ok) return ok;
  for (CommInfo& ci : comms_) {
    ci.record_base = records_;
    records_ += ci.instances;
  }
  rec_start_ = std::make_unique<std::atomic<std::int64_t>[]>(records_);
  rec_end_ = std::make_unique<std::atomic<std::int64_t>[]>(records_);
  for (std::uint64_t i = 0; i < records_; ++i) {
    rec_start_[i].store(-1, std::memory_order_relaxed);
    rec_end_[i].store(-1, std::memory_order_relaxed);
  }
  if (auto ok = build_connections(); !ok) return ok;
  if (auto ok = build_background(); !ok) return ok;
  return cost_folded();
}

std::uint32_t StepApp::ref_group(std::uint32_t job, int stage, Stream stream, const CommOp& op) {
  JobRun& j = jobs_[job];
  auto [it, fresh] = j.ref_index.emplace(std::make_pair(stream, op.gpus),
                                         static_cast<std::uint32_t>(refs_.size()));
  if (fresh) {
    RefGroup r;
    r.job = job;
    r.stage = stage;
    r.stream = stream;
    r.gpus = op.gpus;
    refs_.push_back(std::move(r));
    j.stage_refs[idx(stage)].push_back(it->second);
  }
  return it->second;
}

std::uint32_t StepApp::add_comm(std::uint32_t job, std::vector<std::uint32_t> gpus) {
  CommInfo ci;
  ci.gpus = std::move(gpus);
  ci.job = job;
  std::map<NodeId, std::vector<std::uint32_t>> by_server;
  for (std::uint32_t r = 0; r < ci.gpus.size(); ++r) {
    by_server[all_.gpus[ci.gpus[r]].server].push_back(r);
  }
  ci.local.assign(by_server.begin(), by_server.end());
  ci.folded = ci.local.size() == 1;
  ci.stage = gpus_[ci.gpus[0]].stage;
  comms_.push_back(std::move(ci));
  return static_cast<std::uint32_t>(comms_.size() - 1);
}

// The reference groups of every stage of `job` and each stage op's group and counter.
void StepApp::build_ref_groups(std::uint32_t job) {
  JobRun& j = jobs_[job];
  const auto stages = j.progs.size();
  j.stage_refs.assign(stages, {});
  j.stage_op_ref.assign(stages, {});
  for (std::size_t st = 0; st < stages; ++st) {
    const StageProgram& p = j.progs[st];
    std::vector<std::uint32_t>& op_ref = j.stage_op_ref[st];
    op_ref.assign(p.comm_ops.size(), kNone32);
    const int sti = static_cast<int>(st);
    for (const StageOp& op : p.ops) {
      if (op.kind != StageOpKind::kCollective) continue;
      const std::uint32_t r = ref_group(job, sti, Stream::kCompute, p.comm_ops[op.comm]);
      op_ref[op.comm] = r;
      refs_[r].ops.push_back(op.comm);
    }
    for (std::uint32_t c : p.dp) {
      const std::uint32_t r = ref_group(job, sti, Stream::kDp, p.comm_ops[c]);
      op_ref[c] = r;
      refs_[r].ops.push_back(c);
    }
  }
  j.stage_op_local.assign(stages, {});
  for (std::size_t st = 0; st < stages; ++st) {
    const std::vector<std::uint32_t>& refs = j.stage_refs[st];
    for (std::uint32_t r : j.stage_op_ref[st]) {
      const auto pos = std::find(refs.begin(), refs.end(), r) - refs.begin();
      j.stage_op_local[st].push_back(r == kNone32 ? kNone32 : static_cast<std::uint32_t>(pos));
    }
  }
}

// The reference groups of every stage of `job`, and their copies: one communicator each.
Result<bool> StepApp::build_comms(std::uint32_t job) {
  const std::size_t first_ref = refs_.size();
  build_ref_groups(job);
  const JobRun& j = jobs_[job];
  // Each GPU's copy of each reference group of its stage.
  for (std::size_t ri = first_ref; ri < refs_.size(); ++ri) {
    RefGroup& r = refs_[ri];
    r.comms.assign(idx(j.per_stage), kNone32);
    for (int i = 0; i < j.per_stage; ++i) {
      if (r.comms[idx(i)] != kNone32) continue;
      const GpuRun& gr = gpus_[j.gpu(r.stage, i)];
      const std::vector<std::uint32_t> ranks = translate_group(j.place, r.gpus, gr.t, gr.c, gr.d);
      std::vector<std::uint32_t> gpus;
      for (std::uint32_t m : ranks) gpus.push_back(j.gpus[m]);
      // The stream is part of a communicator's identity (NCCL: separate communicators).
      std::vector<std::uint32_t> key = gpus;
      key.push_back(static_cast<std::uint32_t>(ri));
      auto it = comm_index_.find(key);
      std::uint32_t ci = 0;
      if (it == comm_index_.end()) {
        ci = add_comm(job, gpus);
        comms_[ci].ref = static_cast<std::uint32_t>(ri);
        comms_[ci].instances = static_cast<std::uint32_t>(r.ops.size());
        comm_index_.emplace(std::move(key), ci);
      } else {
        ci = it->second;
      }
      for (std::uint32_t m : ranks) {
        const int local = static_cast<int>(m) - r.stage * j.per_stage;
        if (local < 0 || local >= j.per_stage) {
          return Error{"whole step: a group of stage " + std::to_string(r.stage) +
                       " reaches another stage (placement)"};
        }
        r.comms[idx(local)] = ci;
      }
    }
  }
  // Sequence counters: one per reference group of the GPU's stage.
  for (std::uint32_t g : j.gpus) gpus_[g].seq.assign(j.stage_refs[idx(gpus_[g].stage)].size(), 0);
  return true;
}

std::uint32_t StepApp::pipeline_comm(std::uint32_t src, PassKind kind, std::uint32_t chunk,
                                     int dst_stage) const {
  auto it = pp_comm_.find({src, static_cast<int>(kind), chunk, dst_stage});
  STEPSIM_CHECK(it != pp_comm_.end(), "whole step: a pipeline send without a communicator");
  return it->second;
}

// Pipeline sends of `job`: one communicator per (sender, kind, chunk, receiving stage); the
// sequence number is the micro-batch.
Result<bool> StepApp::build_pipeline_comms(std::uint32_t job) {
  const JobRun& j = jobs_[job];
  if (j.send_bytes <= 0) return true;
  const auto micro = static_cast<std::uint32_t>(j.s.par.micro_batches());
  for (const StageProgram& p : j.progs) {
    for (const StageOp& op : p.ops) {
      if (op.kind != StageOpKind::kSend) continue;
      for (int i = 0; i < j.per_stage; ++i) {
        const std::uint32_t src = j.gpu(p.stage, i);
        const GpuRun& g = gpus_[src];
        const auto key = std::make_tuple(src, static_cast<int>(op.pass), op.chunk, op.peer);
        if (pp_comm_.count(key) != 0) continue;
        const std::uint32_t dst = j.gpus[j.place.rank(g.t, g.c, g.d, op.peer)];
        const std::uint32_t ci = add_comm(job, {src, dst});
        comms_[ci].send_bytes = j.send_bytes;
        comms_[ci].instances = micro;
        pp_comm_.emplace(key, ci);
      }
    }
  }
  return true;
}

CommOp StepApp::op_of(std::uint32_t comm, std::uint32_t seq) const {
  const CommInfo& ci = comms_[comm];
  if (ci.ref == kNone32) {
    return CommOp{collective::Kind::kSend, ci.send_bytes, ci.gpus, CommGroup::kPp};
  }
  const RefGroup& r = refs_[ci.ref];
  CommOp op = jobs_[r.job].progs[idx(r.stage)].comm_ops[r.ops[seq]];
  op.gpus = ci.gpus;
  return op;
}

Result<const collective::CollectiveParams*> StepApp::params_for(std::uint32_t comm,
                                                                collective::Kind kind,
                                                                std::int64_t bytes) {
  const auto key = std::make_tuple(comm, static_cast<int>(kind), bytes);
  if (auto it = params_of_.find(key); it != params_of_.end()) return it->second;
  const CommInfo& ci = comms_[comm];
  collective::CollectiveParams p = collective::applicable_params(
      s_.coll,
      collective::CollectiveShape::of(kind, bytes, ci.comm.size(), ci.comm.gpus_per_server));
  collective::CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  collective::Choice choice;
  auto chosen = collective::prepare_collective(topo_, ci.comm, spec, p, s_.fabric, choice);
  if (!chosen) return chosen.error();
  collective::CollectiveParams cp = std::move(chosen).value();
  if (!collective::runs_concurrently(cp, kind)) cp.algorithm = "ring";
  params_.push_back(std::move(cp));
  params_of_.emplace(key, &params_.back());
  return &params_.back();
}

// Every network communicator's RC connections: the most any of its collectives asks for
// between each pair of NICs, in a deterministic order.
Result<bool> StepApp::build_connections() {
  for (std::uint32_t ci = 0; ci < comms_.size(); ++ci) {
    CommInfo& c = comms_[ci];
    auto comm = collective::make_communicator(topo_, c.gpus);
    if (!comm) return comm.error();
    c.comm = std::move(comm).value();
    if (c.folded || c.mirror) continue;
    std::map<std::pair<collective::Kind, std::int64_t>, bool> seen;
    std::map<std::pair<PortId, PortId>, std::size_t> most;
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const CommOp op = op_of(ci, q);
      if (!seen.emplace(std::make_pair(op.kind, op.bytes), true).second) continue;
      auto p = params_for(ci, op.kind, op.bytes);
      if (!p) return p.error();
      collective::CollectiveSpec spec;
      spec.kind = op.kind;
      spec.bytes = op.bytes;
      collective::CollectiveApp app(c.comm, spec, **p);
      std::map<std::pair<PortId, PortId>, std::size_t> count;
      for (const nic::Connection& cn : app.connections()) ++count[{cn.a, cn.b}];
      for (const auto& [ab, n] : count) most[ab] = std::max(most[ab], n);
    }
    for (const auto& [ab, n] : most) {
      for (std::size_t k = 0; k < n; ++k) {
        nic::Connection cn;
        cn.a = ab.first;
        cn.b = ab.second;
        cn.prio = s_.coll.prio;
        // Own entropy per connection (hash of communicator, ends and ordinal), as NCCL's QPs.
        const std::uint64_t h =
            hash_combine(hash_combine(hash_combine(ci, ab.first), ab.second), k);
        cn.entropy = static_cast<std::uint16_t>(49152 + h % 16384);
        cn.label = static_cast<std::uint32_t>(h >> 44);
        c.pool[ab].push_back(static_cast<std::uint32_t>(conns_.size()));
        conns_.push_back(cn);
        conn_comm_.push_back(ci);
      }
    }
  }
  return true;
}

// Background traffic: each pattern's flows (fabric::make_flows over every NIC of the topology),
// one connection each, writing messages at the pattern's rate.
Result<bool> StepApp::build_background() {
  std::uint32_t seed = 1;
  for (const Scenario::Background& b : s_.background) {
    fabric::TrafficSpec spec;
    spec.pattern = b.pattern;
    spec.seed = seed++;
    auto flows = fabric::make_flows(topo_, spec);
    if (!flows) return Error{"--background: " + flows.error().message};
    const SimTime gap = b.rate.serialization_time(Bytes(s_.background_message));
    for (const fabric::Flow& f : *flows) {
      const NodeId src = topo_.ports[f.src_nic].node;
      if (server_index_[src] < 0) {
        server_index_[src] = static_cast<std::int32_t>(servers_.size());
        servers_.emplace_back();
      }
      nic::Connection cn;
      cn.a = f.src_nic;
      cn.b = f.dst_nic;
      cn.prio = s_.coll.prio;
      cn.entropy = f.entropy;
      cn.label = f.label;
      servers_[idx(server_index_[src])].background.push_back(
          static_cast<std::uint32_t>(background_.size()));
      background_.push_back(
          BackgroundFlow{static_cast<std::uint32_t>(conns_.size()), gap, b.until});
      conns_.push_back(cn);
      conn_comm_.push_back(kBackgroundComm);
    }
  }
  return true;
}

// The memoized cost of every folded collective, by (job, kind, bytes, GPUs): NVLink is the same
// in every server, so one run stands for all copies (a job's own model: its TP/CP copies).
Result<bool> StepApp::cost_folded() {
  for (std::uint32_t ci = 0; ci < comms_.size(); ++ci) {
    const CommInfo& c = comms_[ci];
    if (!c.folded || c.mirror) continue;
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const CommOp op = op_of(ci, q);
      const auto key = std::make_tuple(c.job, static_cast<int>(op.kind), op.bytes, op.gpus.size());
      if (folded_.count(key) != 0) continue;
      auto cost = folded_models_[c.job]->cost(op);
      if (!cost) return cost.error();
      if (cost->stopped) return Error{"the step was interrupted"};
      folded_.emplace(key, *cost);
    }
  }
  return true;
}

// --- runtime --------------------------------------------------------------------------------

void StepApp::on_start(nic::Verbs& v) {
  if (server_index_[v.server()] < 0) return;
  server(v).here = true;
  for (std::uint32_t b : server(v).background) {
    schedule(v, SimTime::zero(), Timer{TimerKind::kBackground, b, 0, 0});
  }
  for (std::uint32_t g : server(v).gpus) advance(v, gpus_[g]);
}

void StepApp::record(ServerState& ss, const GpuRun& g, OpRecord r, SimTime start, SimTime end) {
  if (!g.reference) return;
  r.job = g.job;
  r.stage = static_cast<std::uint32_t>(g.stage);
  r.start_s = start.seconds();
  r.end_s = end.seconds();
  ss.ops.push_back(r);
}

// Compute (or, `optimizer`, the optimizer step) for the op's time, scaled by a straggler's
// factor; the stream goes on when its timer fires.
void StepApp::compute(nic::Verbs& v, GpuRun& g, const StageOp& op, bool optimizer) {
  const SimTime now = v.now();
  const SimTime dt = SimTime::ps(std::llround(op.seconds * g.slowdown * 1e12));
  record(server(v), g, op.record, now, now + dt);
  if (optimizer) {
    g.optimizer += dt.picoseconds();
    g.opt_end = now + dt;
  } else {
    g.compute += dt.picoseconds();
  }
  ++g.pc;
  g.wait = Wait::kTimer;
  schedule(v, dt, Timer{TimerKind::kCompute, g.gpu, 0, 0});
}

// A blocking collective: the GPU arrives at its copy's next instance and waits.
void StepApp::collective(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const JobRun& j = job_of(g);
  const RefGroup& r = refs_[j.stage_op_ref[idx(g.stage)][op.comm]];
  const std::uint32_t comm = r.comms[idx(static_cast<int>(g.rank) - g.stage * j.per_stage)];
  const std::uint32_t seq = g.seq[j.stage_op_local[idx(g.stage)][op.comm]]++;
  ++g.pc;
  g.wait = Wait::kCollective;
  g.since = v.now();
  g.wait_group = j.progs[idx(g.stage)].comm_ops[op.comm].group;
  arrive(v, comm, seq, &g, Stream::kCompute);
}

// A pass begins or ends: the first forward pass's length (it hides the parameter gather).
void StepApp::pass_mark(GpuRun& g, const StageOp& op, SimTime now) {
  if (op.kind == StageOpKind::kPassStart && op.pass == PassKind::kForward && g.first_fwd < 0 &&
      !g.in_first_fwd) {
    g.in_first_fwd = true;
    g.pass_start = now;
  }
  if (op.kind == StageOpKind::kPassEnd && op.pass == PassKind::kForward && g.in_first_fwd) {
    g.in_first_fwd = false;
    g.first_fwd = (now - g.pass_start).picoseconds();
  }
  ++g.pc;
}

// ZeRO 1/2's parameter gathers after the optimizer: released once; the step ends when they are
// done, their time hidden behind the next step's first forward pass up to its length (until
// then the GPU waits for them).
void StepApp::param_gather(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const SimTime now = v.now();
  if (!g.gathers_released) {
    g.gathers_released = true;
    g.dp_released = std::max(g.dp_released, op.dp);
    try_dp(v, g);
  }
  if (g.dp_done < op.dp) {
    g.wait = Wait::kDpAll;
    g.since = now;
    return;
  }
  const std::int64_t gather = (now - g.opt_end).picoseconds();
  const std::int64_t hidden =
      job_of(g).s.par.overlap_param_gather ? std::max<std::int64_t>(0, g.first_fwd) : 0;
  const std::int64_t exposed = std::max<std::int64_t>(0, gather - hidden);
  g.exposed[static_cast<int>(CommGroup::kDp)] += exposed;
  g.end = g.opt_end + SimTime::ps(exposed);
  g.wait = Wait::kDone;
  ++g.pc;
}

// Runs GPU `g`'s compute stream from its program counter until it has to wait.
void StepApp::advance(nic::Verbs& v, GpuRun& g) {
  const StageProgram& p = job_of(g).progs[idx(g.stage)];
  const SimTime now = v.now();
  while (g.pc < p.ops.size()) {
    const StageOp& op = p.ops[g.pc];
    switch (op.kind) {
      case StageOpKind::kCompute:
        compute(v, g, op, false);
        return;
      case StageOpKind::kCollective:
        collective(v, g, op);
        return;
      case StageOpKind::kRecv:
        ++g.pc;
        recv(v, g, op);
        return;
      case StageOpKind::kSend:
        send(v, g, op);
        ++g.pc;
        break;
      case StageOpKind::kPassStart:
      case StageOpKind::kPassEnd:
        pass_mark(g, op, now);
        break;
      case StageOpKind::kRelease:
        g.dp_released = std::max(g.dp_released, op.dp);
        ++g.pc;
        try_dp(v, g);
        break;
      case StageOpKind::kWaitDp:
        ++g.pc;
        if (g.dp_done > op.dp) break;
        g.wait = Wait::kDp;
        g.wait_arg = op.dp;
        g.since = now;
        return;
      case StageOpKind::kOptimizer:
        if (g.dp_done < g.dp_released) {
          g.wait = Wait::kDpAll;
          g.since = now;
          return;
        }
        compute(v, g, op, true);
        return;
      case StageOpKind::kParamGather:
        param_gather(v, g, op);
        return;
    }
  }
  if (g.wait != Wait::kDone) {
    g.end = now;
    g.wait = Wait::kDone;
  }
}

// A GPU's wait is over at `now`: account for it and go on.
void StepApp::wake(nic::Verbs& v, GpuRun& g, SimTime now) {
  const std::int64_t waited = (now - g.since).picoseconds();
  switch (g.wait) {
    case Wait::kCollective: {
      const StageProgram& p = job_of(g).progs[idx(g.stage)];
      const StageOp& op = p.ops[g.pc - 1];
      const CommOp& c = p.comm_ops[op.comm];
      if (c.overlap_s > 0) {
        // Megatron's TP overlap: the GEMM ran beside the collective; the stream goes on when
        // both are through (overlapped_seconds), perhaps after the collective.
        const SimTime gemm = SimTime::ps(std::llround(c.overlap_s * g.slowdown * 1e12));
        const SimTime both =
            SimTime::ps(std::llround(overlapped_seconds(static_cast<double>(waited) * 1e-12,
                                                        gemm.seconds(), c.overlap_chunks) *
                                     1e12));
        g.compute += gemm.picoseconds();
        g.exposed[static_cast<int>(g.wait_group)] += (both - gemm).picoseconds();
        record(server(v), g, op.record, g.since, g.since + gemm);
        if (both > gemm && g.reference) {
          OpRecord r;
          r.kind = OpKind::kComm;
          r.group = g.wait_group;
          record(server(v), g, r, g.since + gemm, g.since + both);
        }
        if (g.since + both > now) {
          g.wait = Wait::kTimer;
          schedule(v, g.since + both - now, Timer{TimerKind::kCompute, g.gpu, 0, 0});
          return;
        }
        break;
      }
      g.exposed[static_cast<int>(g.wait_group)] += waited;
      if (waited > 0 && g.reference) {
        OpRecord r;
        r.kind = OpKind::kComm;
        r.group = g.wait_group;
        record(server(v), g, r, g.since, now);
      }
      break;
    }
    case Wait::kRecv:
      g.bubble += waited;
      if (waited > 0 && g.reference) {
        OpRecord w;
        w.kind = OpKind::kWait;
        const StageOp& op = job_of(g).progs[idx(g.stage)].ops[g.pc - 1];
        w.micro = op.micro;
        w.chunk = op.chunk;
        record(server(v), g, w, g.since, now);
      }
      break;
    case Wait::kDp:
      g.exposed[static_cast<int>(CommGroup::kDp)] += waited;
      break;
    case Wait::kDpAll:
      // The parameter gather counts only what the next step's first forward does not hide
      // (advance() adds it); the optimizer's wait for the buckets is all exposed.
      if (job_of(g).progs[idx(g.stage)].ops[g.pc].kind != StageOpKind::kParamGather) {
        g.exposed[static_cast<int>(CommGroup::kDp)] += waited;
      }
      break;
    default:
      break;
  }
  g.wait = Wait::kRunning;
  advance(v, g);
}

void StepApp::try_dp(nic::Verbs& v, GpuRun& g) {
  if (g.dp_busy || g.dp_done >= g.dp_released) return;
  const JobRun& j = job_of(g);
  const std::uint32_t c = j.progs[idx(g.stage)].dp[g.dp_done];
  const RefGroup& r = refs_[j.stage_op_ref[idx(g.stage)][c]];
  const std::uint32_t comm = r.comms[idx(static_cast<int>(g.rank) - g.stage * j.per_stage)];
  const std::uint32_t seq = g.seq[j.stage_op_local[idx(g.stage)][c]]++;
  g.dp_busy = true;
  arrive(v, comm, seq, &g, Stream::kDp);
}

void StepApp::send(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const std::uint32_t comm = pipeline_comm(g.gpu, op.pass, op.chunk, op.peer);
  if (!comms_[comm].folded) {
    arrive(v, comm, op.micro, nullptr, Stream::kNone);
    return;
  }
  // In one server: the data is in after the memoized time, from when the sender's NVLink is
  // free; the reader (same server) is woken then if it waits.
  ServerState& ss = server(v);
  const CommInfo& ci = comms_[comm];
  const CommCost& cost = folded_.at(std::make_tuple(
      ci.job, static_cast<int>(collective::Kind::kSend), ci.send_bytes, std::size_t{2}));
  SimTime& free = nvlink_free_[g.gpu];
  const SimTime start = std::max(v.now(), free);
  const SimTime occupy = s_.coll.nvlink_payload().serialization_time(Bytes(ci.send_bytes));
  free = start + std::min(occupy, SimTime::ps(std::llround(cost.seconds * 1e12)));
  const SimTime in = start + SimTime::ps(std::llround(cost.seconds * 1e12));
  const std::uint64_t key = key_of(comm, op.micro);
  const std::uint64_t rec = ci.record_base + op.micro;
  rec_start_[rec].store(v.now().picoseconds(), std::memory_order_relaxed);
  rec_end_[rec].store(in.picoseconds(), std::memory_order_relaxed);
  ss.mail[key] = in;
  if (auto it = ss.reader.find(key); it != ss.reader.end()) {
    schedule(v, in - v.now(), Timer{TimerKind::kMail, it->second, key, 0});
    ss.reader.erase(it);
  }
}

void StepApp::recv(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const JobRun& j = job_of(g);
  const std::uint32_t src = j.gpus[j.place.rank(g.t, g.c, g.d, op.peer)];
  const std::uint32_t comm = pipeline_comm(src, op.pass, op.chunk, g.stage);
  g.wait = Wait::kRecv;
  g.since = v.now();
  if (!comms_[comm].folded) {
    arrive(v, comm, op.micro, &g, Stream::kCompute);
    return;
  }
  ServerState& ss = server(v);
  const std::uint64_t key = key_of(comm, op.micro);
  if (auto it = ss.mail.find(key); it != ss.mail.end()) {
    const SimTime in = it->second;
    ss.mail.erase(it);
    schedule(v, std::max(in, v.now()) - v.now(), Timer{TimerKind::kMail, g.gpu, key, 0});
  } else {
    ss.reader[key] = g.gpu;
  }
}

Instance& StepApp::instance(ServerState& ss, std::uint32_t comm, std::uint32_t seq) {
  auto [it, fresh] = ss.live.try_emplace(key_of(comm, seq));
  if (fresh) {
    it->second.comm = comm;
    it->second.seq = seq;
  }
  return it->second;
}

void StepApp::create_app(Instance& inst) {
  const CommInfo& ci = comms_[inst.comm];
  const CommOp op = op_of(inst.comm, inst.seq);
  const collective::CollectiveParams* p =
      params_of_.at(std::make_tuple(inst.comm, static_cast<int>(op.kind), op.bytes));
  collective::CollectiveSpec spec;
  spec.kind = op.kind;
  spec.bytes = op.bytes;
  inst.app = std::make_unique<collective::CollectiveApp>(ci.comm, spec, *p);
  inst.base_latency = p->base_latency();
  std::map<std::pair<PortId, PortId>, std::size_t> used;
  const auto& local = inst.app->connections();
  inst.to_global.reserve(local.size());
  for (std::uint32_t i = 0; i < local.size(); ++i) {
    const std::pair<PortId, PortId> ab{local[i].a, local[i].b};
    const std::uint32_t gc = ci.pool.at(ab)[used[ab]++];
    inst.to_global.push_back(gc);
    inst.to_local.emplace_back(gc, i);
  }
  std::sort(inst.to_local.begin(), inst.to_local.end());
  inst.flows.assign(2 * local.size(), FlowAgg{});
  for (std::uint32_t r = 0; r < ci.gpus.size(); ++r) {
    inst.app->share_nvlink(r, &nvlink_free_[ci.gpus[r]]);
  }
}

// A member (`g`, or nobody for an asynchronous send) reaches instance (comm, seq) on its server.
void StepApp::arrive(nic::Verbs& v, std::uint32_t comm, std::uint32_t seq, GpuRun* g,
                     Stream stream) {
  ServerState& ss = server(v);
  const CommInfo& ci = comms_[comm];
  Instance& inst = instance(ss, comm, seq);
  const std::vector<std::uint32_t>* ranks = ci.ranks_on(v.server());
  STEPSIM_CHECK(ranks != nullptr, "whole step: a GPU arrived at a collective it is not in");
  // Mirrors (step.fold rails) never arrive.
  inst.members =
      static_cast<std::size_t>(std::count_if(ranks->begin(), ranks->end(), [&](std::uint32_t r) {
        return gpus_[ci.gpus[r]].mirror == kNone32;
      }));
  const std::uint32_t gpu = g != nullptr ? g->gpu : ci.gpus[0];
  const auto rank =
      static_cast<std::uint32_t>(std::find(ci.gpus.begin(), ci.gpus.end(), gpu) - ci.gpus.begin());
  inst.waiters.push_back(Waiter{gpu, rank, stream, false});
  if (inst.waiters.size() < inst.members) return;
  // The record starts when the last server's members are all in (a pipeline send: when the
  // sender posts it; the receiver may come much later).
  const bool pipeline = ci.ref == kNone32;
  if (!pipeline || g == nullptr) {
    const std::uint64_t rec = ci.record_base + seq;
    std::int64_t prev = rec_start_[rec].load(std::memory_order_relaxed);
    const std::int64_t now = v.now().picoseconds();
    while ((prev < 0 || now > prev) && !rec_start_[rec].compare_exchange_weak(prev, now)) {
    }
  }
  if (ci.folded) {
    start_folded(v, inst);
    return;
  }
  create_app(inst);
  ++inst.pending_timers;
  // The protocol's base latency (launch and set-up) comes before the first piece moves.
  schedule(v, inst.base_latency, Timer{TimerKind::kStart, 0, key_of(comm, seq), 0});
}

// Folded: the memoized time from when every member's NVLink is free; NVLink busy for the bytes.
void StepApp::start_folded(nic::Verbs& v, Instance& inst) {
  const CommInfo& ci = comms_[inst.comm];
  const CommOp op = op_of(inst.comm, inst.seq);
  const CommCost& cost =
      folded_.at(std::make_tuple(ci.job, static_cast<int>(op.kind), op.bytes, op.gpus.size()));
  SimTime start = v.now();
  for (std::uint32_t g : ci.gpus) start = std::max(start, nvlink_free_[g]);
  const SimTime t = SimTime::ps(std::llround(cost.seconds * 1e12));
  const double wire = collective::busbw_factor(op.kind, static_cast<int>(op.gpus.size())) *
                      static_cast<double>(op.bytes);
  const SimTime occupy = std::min(
      t, s_.coll.nvlink_payload().serialization_time(Bytes(static_cast<std::int64_t>(wire))));
  for (std::uint32_t g : ci.gpus) nvlink_free_[g] = start + occupy;
  ++inst.pending_timers;
  schedule(v, start + t - v.now(), Timer{TimerKind::kFolded, 0, key_of(inst.comm, inst.seq), 0});
}

void StepApp::on_timer(nic::Verbs& v, const nic::AppTimer& timer) {
  ServerState& ss = server(v);
  const Timer t = ss.timers.take(0, timer.tag);
  switch (t.kind) {
    case TimerKind::kCompute:
      wake(v, gpus_[t.gpu], v.now());
      return;
    case TimerKind::kMail:
      wake(v, gpus_[t.gpu], v.now());
      return;
    case TimerKind::kBackground: {  // (gpu: the background flow)
      const BackgroundFlow& b = background_[t.gpu];
      if (v.now() >= b.until) return;
      nic::WorkRequest wr;
      wr.opcode = nic::Opcode::kWrite;
      wr.bytes = s_.background_message;
      v.post(nic::endpoint_of(b.connection, 0), wr);
      schedule(v, b.gap, t);
      return;
    }
    case TimerKind::kFolded: {
      Instance& inst = ss.live.at(t.key);
      --inst.pending_timers;
      for (Waiter& w : inst.waiters) w.done = true;
      inst.done = inst.waiters.size();
      check_done(v, t.key);
      return;
    }
    case TimerKind::kStart: {
      Instance& inst = ss.live.at(t.key);
      --inst.pending_timers;
      inst.started = true;
      InstanceVerbs iv(v, *this, inst);
      // The algorithm starts on this server.
      inst.app->on_timer(iv, nic::AppTimer{.tag = collective::kStartTag});
      std::vector<nic::Completion> early = std::move(inst.deferred);
      inst.deferred.clear();
      for (const nic::Completion& c : early) deliver(v, inst, c.endpoint, c);
      check_done(v, t.key);
      return;
    }
    case TimerKind::kInstance: {
      Instance& inst = ss.live.at(t.key);
      --inst.pending_timers;
      InstanceVerbs iv(v, *this, inst);
      inst.app->on_timer(iv, t.inner);
      check_done(v, t.key);
      return;
    }
  }
}

void StepApp::on_cq(nic::Verbs& v, std::uint32_t endpoint) {
  ServerState& ss = server(v);
  std::array<nic::Completion, 16> wc;
  std::size_t k;
  const std::uint32_t conn = endpoint / 2;
  const std::uint32_t comm = conn_comm_[conn];
  if (comm == kBackgroundComm) {
    while ((k = v.poll_cq(endpoint, wc)) > 0) {
      for (std::size_t i = 0; i < k; ++i) {
        if (wc[i].status != nic::WcStatus::kSuccess) ++ss.failed;
        ss.background_bytes += static_cast<std::uint64_t>(wc[i].bytes);
      }
    }
    return;
  }
  while ((k = v.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < k; ++i) {
      nic::Completion c = wc[i];
      if (c.status != nic::WcStatus::kSuccess) {  // a modelled failure, not a crash
        ++ss.failed;
        continue;
      }
      const std::uint32_t seq = c.recv ? c.imm : static_cast<std::uint32_t>(c.wr_id);
      if (!c.recv) ss.delivered += static_cast<std::uint64_t>(c.bytes);
      Instance& inst = instance(ss, comm, seq);
      STEPSIM_CHECK(c.recv || inst.app != nullptr,
                    "whole step: a send completion for a collective that is not running");
      if (inst.app == nullptr) {
        // Not started here: the data waits in the receive buffer.
        c.endpoint = endpoint;
        inst.deferred.push_back(c);
        continue;
      }
      deliver(v, inst, endpoint, c);
      check_done(v, key_of(comm, seq));
    }
  }
}

// Hands a completion on global `endpoint` to the instance's algorithm (before its start: kept).
void StepApp::deliver(nic::Verbs& v, Instance& inst, std::uint32_t endpoint, nic::Completion c) {
  if (!inst.started) {
    c.endpoint = endpoint;
    inst.deferred.push_back(c);
    return;
  }
  const std::uint32_t conn = endpoint / 2;
  auto it = std::lower_bound(inst.to_local.begin(), inst.to_local.end(),
                             std::make_pair(conn, std::uint32_t{0}));
  STEPSIM_CHECK(it != inst.to_local.end() && it->first == conn,
                "whole step: a completion on a connection the collective does not use");
  const std::uint32_t local_ep = it->second * 2 + (endpoint & 1u);
  FlowAgg& f = inst.flows[c.recv ? (local_ep ^ 1u) : local_ep];
  if (c.recv) {
    f.ecn += c.ecn_marked;
  } else {
    --inst.outstanding;
    f.bytes += static_cast<std::uint64_t>(c.bytes);
    ++f.messages;
    f.packets += c.packets;
    f.retransmitted += c.retransmitted;
    const std::int64_t posted = c.posted.picoseconds();
    f.start = f.start < 0 ? posted : std::min(f.start, posted);
    const std::int64_t first = c.first_byte.picoseconds() > 0 ? c.first_byte.picoseconds() : posted;
    f.first_byte = f.first_byte < 0 ? first : std::min(f.first_byte, first);
    f.end = std::max(f.end, c.done.picoseconds());
    server(v).fct.add((c.done - c.posted).picoseconds());
  }
  c.endpoint = local_ep;
  c.imm = 0;
  c.wr_id = 0;
  InstanceVerbs iv(v, *this, inst);
  inst.app->on_completion(iv, local_ep, c);
}

// After a callback into instance `key`: members that finished go on; a finished part retires.
void StepApp::check_done(nic::Verbs& v, std::uint64_t key) {
  ServerState& ss = server(v);
  auto it = ss.live.find(key);
  if (it == ss.live.end()) return;
  Instance& inst = it->second;
  std::vector<Waiter> finished;
  if (inst.app != nullptr) {
    for (Waiter& w : inst.waiters) {
      if (!w.done && inst.app->gpu_done(w.rank)) {
        w.done = true;
        ++inst.done;
        finished.push_back(w);
      }
    }
  } else if (inst.done == inst.waiters.size() && inst.members > 0 && inst.done == inst.members) {
    finished = inst.waiters;  // folded: all at once
  }
  const bool over = inst.members > 0 && inst.done == inst.members && inst.pending_timers == 0 &&
                    inst.outstanding == 0;
  if (over) {
    retire(ss, inst, v.now());
    ss.live.erase(it);
  }
  for (const Waiter& w : finished) member_done(v, w);
}

void StepApp::member_done(nic::Verbs& v, const Waiter& w) {
  if (w.stream == Stream::kNone) return;
  GpuRun& g = gpus_[w.gpu];
  if (w.stream == Stream::kDp) {
    g.dp_busy = false;
    ++g.dp_done;
    try_dp(v, g);
    if ((g.wait == Wait::kDp && g.dp_done > g.wait_arg) ||
        (g.wait == Wait::kDpAll && g.dp_done >= g.dp_released)) {
      wake(v, g, v.now());
    }
    return;
  }
  wake(v, g, v.now());
}

// The part of a collective on one server is over: its record's end and its flows.
void StepApp::retire(ServerState& ss, Instance& inst, SimTime now) {
  const CommInfo& ci = comms_[inst.comm];
  const std::uint64_t rec = ci.record_base + inst.seq;
  // A pipeline send ends when the sender's messages completed (the data is in).
  const bool reader =
      ci.ref == kNone32 && !inst.waiters.empty() && inst.waiters[0].stream != Stream::kNone;
  std::int64_t prev = rec_end_[rec].load(std::memory_order_relaxed);
  while (!reader && now.picoseconds() > prev &&
         !rec_end_[rec].compare_exchange_weak(prev, now.picoseconds())) {
  }
  if (inst.app == nullptr) return;
  // One row per direction between two NICs (a collective's channels share them): the sender's
  // part holds bytes and times, the receiver's the ECN marks; collect() merges them.
  const auto& local = inst.app->connections();
  const CommOp op = op_of(inst.comm, inst.seq);
  std::map<std::pair<PortId, PortId>, FlowRow> rows;
  for (std::uint32_t ep = 0; ep < inst.flows.size(); ++ep) {
    const FlowAgg& f = inst.flows[ep];
    if (f.messages == 0 && f.ecn == 0) continue;
    const nic::Connection& cn = local[ep / 2];
    const PortId src = (ep & 1u) == 0 ? cn.a : cn.b;
    const PortId dst = (ep & 1u) == 0 ? cn.b : cn.a;
    FlowRow& r = rows[{src, dst}];
    if (r.repeats == 0) {
      r.collective = static_cast<std::uint32_t>(rec);
      r.job = ci.job;
      r.repeats = 1;
      r.src_nic = src;
      r.dst_nic = dst;
      r.src_gpu = gpu_of_nic_[src];
      r.dst_gpu = gpu_of_nic_[dst];
      r.group = op.group;
      r.kind = op.kind;
    }
    merge_flow(r, f);
  }
  for (auto& [ab, r] : rows) ss.flows.push_back(r);
}

// --- gathering the trace --------------------------------------------------------------------

// Every rank's `mine`, concatenated in rank order, on every rank (T is trivially copyable).
template <class T>
std::vector<T> all_gather(pdes::Sync& sync, const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto ranks = static_cast<std::size_t>(sync.size());
  std::vector<std::uint64_t> counts(ranks, 0);
  counts[static_cast<std::size_t>(sync.rank())] = mine.size();
  sync.allreduce_sum(counts);
  std::size_t before = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r < static_cast<std::size_t>(sync.rank())) before += counts[r];
    total += counts[r];
  }
  constexpr std::size_t kWords = (sizeof(T) + 7) / 8;
  std::vector<std::uint64_t> buf(total * kWords, 0);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(&buf[(before + i) * kWords], static_cast<const void*>(&mine[i]), sizeof(T));
  }
  sync.allreduce_sum(buf);
  std::vector<T> out(total);
  for (std::size_t i = 0; i < total; ++i)
    std::memcpy(static_cast<void*>(&out[i]), &buf[i * kWords], sizeof(T));
  return out;
}

// Each stage's clock (its slowest GPU's; the jobs' stages in turn) into trace.stages, and why
// the run ended. An error: the simulation stalled (GPUs wait with nothing left to happen).
Result<StepStop> StepApp::collect_stages(pdes::Sync& sync, const nic::RdmaRun& run, bool stopped,
                                         StepTrace& trace) {
  // Each GPU's clocks (its server's rank fills them; the others keep the defaults).
  const std::size_t n = gpus_.size();
  std::vector<GpuClock> clocks(n);
  for (const ServerState& ss : servers_) {
    if (!ss.here) continue;
    for (std::uint32_t gi : ss.gpus) {
      const GpuRun& g = gpus_[gi];
      GpuClock& c = clocks[gi];
      c.end_ps = g.wait == Wait::kDone ? g.end.picoseconds() : -1;
      c.compute_ps = g.compute;
      c.bubble_ps = g.bubble;
      c.optimizer_ps = g.optimizer;
      for (int k = 0; k < kCommGroups; ++k) c.*kExposedPs[idx(k)] = g.exposed[idx(k)];
      c.waiting_since_ps = g.since.picoseconds();
    }
  }
  stat::allreduce(sync, clocks);
  for (std::uint32_t gi = 0; gi < n; ++gi) {
    if (gpus_[gi].mirror != kNone32) clocks[gi] = clocks[gpus_[gi].mirror];
  }
  std::vector<std::size_t> base;  // by job: its first stage in trace.stages
  for (const JobRun& j : jobs_) {
    base.push_back(trace.stages.size());
    trace.stages.resize(trace.stages.size() + j.progs.size());
    if (!s_.jobs.empty()) trace.job_stages.push_back(static_cast<std::uint32_t>(j.progs.size()));
  }
  std::vector<std::int64_t> stage_end(trace.stages.size(), -1);
  const std::int64_t last = run.stats.final_time.picoseconds();
  std::uint64_t unfinished = 0;
  std::uint32_t first_stuck = kNone32;
  for (std::uint32_t gi = 0; gi < n; ++gi) {
    if (!gpus_[gi].used) continue;
    const GpuClock& c = clocks[gi];
    const bool done = c.end_ps >= 0;
    if (!done) {
      ++unfinished;
      if (first_stuck == kNone32) first_stuck = gi;
    }
    // The stage's clock is its slowest GPU's (one that did not finish: the run's end).
    const std::int64_t stuck = c.waiting_since_ps;
    const std::int64_t end = done ? c.end_ps : std::min(last, stopped || stuck <= 0 ? last : stuck);
    const std::size_t st = base[gpus_[gi].job] + idx(gpus_[gi].stage);
    if (end <= stage_end[st]) continue;
    stage_end[st] = end;
    StageTime& t = trace.stages[st];
    t.t = static_cast<double>(end) * 1e-12;
    t.compute = static_cast<double>(c.compute_ps) * 1e-12;
    t.bubble = static_cast<double>(c.bubble_ps) * 1e-12;
    t.optimizer = static_cast<double>(c.optimizer_ps) * 1e-12;
    for (int k = 0; k < kCommGroups; ++k) {
      t.exposed[k] = static_cast<double>(c.*kExposedPs[idx(k)]) * 1e-12;
    }
  }
  std::vector<std::uint64_t> failed{0};
  for (const ServerState& ss : servers_) failed[0] += ss.failed;
  sync.allreduce_sum(failed);
  trace.failed_transfers = failed[0];
  if (unfinished > 0 && failed[0] == 0 && !stopped && run.stats.completed &&
      run.stats.final_time < s_.end) {
    const GpuRun& g = gpus_[first_stuck];
    const std::string job = s_.jobs.empty() ? "" : ", job " + s_.jobs[g.job].name;
    return Error{"whole step: " + std::to_string(unfinished) + " GPUs did not finish (GPU " +
                 std::to_string(first_stuck) + job + ", stage " + std::to_string(g.stage) +
                 ", stopped at op " + std::to_string(g.pc) + "): the simulation stalled"};
  }
  return stopped           ? StepStop::kInterrupted
         : unfinished == 0 ? StepStop::kDone
         : failed[0] > 0   ? StepStop::kFailed
                           : StepStop::kEnd;
}

// The collectives: first arrival to last member done, over every rank (an interrupted step:
// those that ran; ids stay the rows' numbers).
void StepApp::collect_collectives(pdes::Sync& sync, StepTrace& trace) const {
  std::vector<std::int64_t> se(2 * records_);
  for (std::uint64_t i = 0; i < records_; ++i) {
    se[i] = -rec_start_[i].load();
    se[records_ + i] = -rec_end_[i].load();
  }
  sync.allreduce_min(se);
  for (std::uint32_t ci = 0; ci < comms_.size(); ++ci) {
    const CommInfo& c = comms_[ci];
    // A mirror (step.fold rails) ran as its rail-0 copy.
    const std::uint64_t base = c.mirror ? comms_[c.rep].record_base : c.record_base;
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const std::uint64_t i = c.record_base + q;
      const std::int64_t start = -se[base + q];
      const std::int64_t end = -se[records_ + base + q];
      const bool ran = start >= 0 && end >= start;
      if (!ran && trace.stop != StepStop::kDone) continue;
      const CommOp op = op_of(ci, q);
      CollectiveRecord r;
      r.id = static_cast<std::uint32_t>(i);
      r.job = c.job;
      r.stage = static_cast<std::uint32_t>(c.stage);
      r.group = op.group;
      r.kind = op.kind;
      r.bytes = op.bytes;
      r.gpus = static_cast<std::uint32_t>(op.gpus.size());
      r.start_s = ran ? static_cast<double>(start) * 1e-12 : -1;
      r.end_s = ran ? static_cast<double>(end) * 1e-12 : -1;
      r.busbw_gbs = ran && end > start
                        ? static_cast<double>(op.bytes) /
                              (static_cast<double>(end - start) * 1e-12) / 1e9 *
                              collective::busbw_factor(op.kind, static_cast<int>(op.gpus.size()))
                        : 0;
      trace.colls.push_back(r);
    }
  }
}

// The reference pipelines' ops (job by job, stage by stage) and the flows, from every rank;
// returns the RDMA messages' completion times.
LogHistogram StepApp::collect_records(pdes::Sync& sync, StepTrace& trace) {
  std::vector<OpRecord> ops;
  std::vector<FlowRow> flows;
  LogHistogram fct;
  for (ServerState& ss : servers_) {
    ops.insert(ops.end(), ss.ops.begin(), ss.ops.end());
    flows.insert(flows.end(), ss.flows.begin(), ss.flows.end());
    fct.merge(ss.fct);
  }
  trace.ops = all_gather(sync, ops);
  std::stable_sort(trace.ops.begin(), trace.ops.end(), [](const OpRecord& a, const OpRecord& b) {
    return std::tie(a.job, a.stage) < std::tie(b.job, b.stage);
  });
  std::vector<FlowRow> all_flows = all_gather(sync, flows);
  std::sort(all_flows.begin(), all_flows.end(), [](const FlowRow& a, const FlowRow& b) {
    return std::tie(a.collective, a.src_nic, a.dst_nic, a.messages) <
           std::tie(b.collective, b.src_nic, b.dst_nic, b.messages);
  });
  for (const FlowRow& f : all_flows) {
    if (!trace.flows.empty() && trace.flows.back().collective == f.collective &&
        trace.flows.back().src_nic == f.src_nic && trace.flows.back().dst_nic == f.dst_nic) {
      merge_rows(trace.flows.back(), f);
    } else {
      trace.flows.push_back(f);
    }
  }
  std::vector<std::uint64_t> bins(fct.bins().begin(), fct.bins().end());
  sync.allreduce_sum(bins);
  std::copy(bins.begin(), bins.end(), fct.bins().begin());
  return fct;
}

Result<StepTrace> StepApp::collect(pdes::Sync& sync, nic::RdmaRun& run, bool stopped) {
  StepTrace trace;
  auto stop = collect_stages(sync, run, stopped, trace);
  if (!stop) return stop.error();
  trace.stop = *stop;
  trace.folded_rails = rails_;
  trace.foldable_rails = foldable_;
  collect_collectives(sync, trace);
  const LogHistogram fct = collect_records(sync, trace);
  // The whole run's fabric, as one "distinct collective" for the summary.
  DistinctCollective d;
  d.first = 0;
  d.repeats = 1;
  fill_fabric(d.cost, run, {});
  d.cost.message_fct = std::make_shared<const LogHistogram>(fct);
  d.cost.digest = run.stats.digest;
  trace.distinct.push_back(std::move(d));
  return trace;
}

}  // namespace

Result<StepTrace> run_whole_step_trace(const Scenario& s, const topology::Topology& topo,
                                       const std::vector<CommModel*>& folded, pdes::Sync& sync,
                                       pdes::EngineOptions engine,
                                       const std::function<bool(double)>& progress,
                                       fabric::FabricSamples* samples,
                                       const std::function<void(std::uint32_t)>& foldable) {
  if (folded.size() != std::max<std::size_t>(1, s.jobs.size())) {
    return Error{"whole step: " + std::to_string(folded.size()) + " folded comm models for " +
                 std::to_string(s.jobs.size()) + " jobs"};
  }
  StepApp app(s, topo, folded);
  if (auto ok = app.setup(); !ok) return ok.error();
  if (foldable && app.foldable() > 1) foldable(app.foldable());
  fabric::FabricParams fabric = s.fabric;
  if (s.fidelity == "cell") fabric.cell = s.cell;
  engine.end = std::min(engine.end, s.end);
  engine.progress_work = [&app] { return app.delivered_bytes(); };
  if (progress) {
    auto inner = engine.on_progress;
    engine.on_progress = [inner, progress](const pdes::Progress& p) {
      if (inner) inner(p);
      if (!progress(p.now.seconds())) pdes::Engine::request_stop();
    };
  }
  auto r = nic::run_rdma(topo, app.connections(), s.nic, fabric, &app, sync, std::move(engine),
                         nullptr, samples);
  if (!r) return r.error();
  nic::RdmaRun run = std::move(r).value();
  const bool stopped = !run.stats.completed && pdes::Engine::stop_requested();
  return app.collect(sync, run, stopped);
}

}  // namespace stepsim::workload
