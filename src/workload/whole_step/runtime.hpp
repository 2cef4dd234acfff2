#pragma once
// The whole step at run time (see whole_step.hpp): StepApp, the RDMA application over a const
// StepPlan (plan.hpp). Its GPU streams (gpu_streams.cpp) run each GPU's stage program; its
// collective instances (instances.cpp) run one collective's part on one server; gathering the
// trace (trace.cpp) reduces what every rank saw into the StepTrace.

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "src/workload/whole_step/plan.hpp"
#include "stepsim/collective/timer_table.hpp"
#include "stepsim/core/log_histogram.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/workload/flow_row_stats.hpp"
#include "stepsim/workload/step_summary.hpp"

namespace stepsim::workload::whole_step {

struct Waiter {
  std::uint32_t gpu = 0;   // global GPU
  std::uint32_t rank = 0;  // communicator rank
  Stream stream = Stream::kNone;
  bool done = false;
};

/// One collective's part on one server.
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
  std::vector<FlowRow> flows;  // by local endpoint: what it sent (and ECN at receive); stats only
  SimTime base_latency;        // the protocol's
};

inline std::uint64_t key_of(std::uint32_t comm, std::uint32_t seq) {
  return (static_cast<std::uint64_t>(comm) << 32) | seq;
}

enum class TimerKind : std::uint8_t { kCompute, kStart, kInstance, kFolded, kMail, kBackground };
struct Timer {
  TimerKind kind = TimerKind::kCompute;
  std::uint32_t gpu = 0;
  std::uint64_t key = 0;
  nic::AppTimer inner;  ///< kInstance: the collective's own timer
};

/// Why a GPU's compute stream is not running.
enum class Wait : std::uint8_t { kRunning, kTimer, kCollective, kRecv, kDp, kDpAll, kDone };

/// A GPU's streams at run time (its place in the plan: `p`).
struct GpuRun {
  const GpuPlan* p = nullptr;
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
  std::int64_t ep_hidden = 0;  // moe.overlap: EP time hidden behind the partner's compute
  std::array<std::int64_t, kCommGroups> exposed{};
  SimTime end = SimTime::never();
  SimTime opt_end;
  SimTime pass_start;
  std::int64_t first_fwd = -1;  // the first forward pass's length (hides the parameter gather)
  bool in_first_fwd = false;
};

/// A server's state at run time (its plan: StepPlan::servers, same index).
struct ServerState {
  std::unordered_map<std::uint64_t, Instance> live;
  collective::TimerTable<Timer> timers{1};
  std::vector<OpRecord> ops;        // the reference GPUs' compute streams
  std::vector<OpRecord> trace_ops;  // the traced GPUs' (GpuPlan::trace_source)
  std::vector<FlowRow> flows;
  LogHistogram fct;
  std::map<std::uint64_t, SimTime> mail;          // folded pipeline sends: key -> data in
  std::map<std::uint64_t, std::uint32_t> reader;  // folded pipeline sends: key -> waiting GPU
  bool here = false;                              // this rank runs the server
  std::uint64_t background_bytes = 0;             // completed background writes
  std::uint64_t failed = 0;                       // completions in error
  std::uint64_t delivered = 0;  // collectives' bytes in completed sends (progress)
};

class StepApp;

/// The verbs one collective instance sees: its own connection numbers and timer tags, and the
/// sequence number on everything it posts.
class InstanceVerbs final : public nic::Verbs {
 public:
  InstanceVerbs(nic::Verbs& v, StepApp& app, Instance& inst) : v_(v), app_(app), inst_(inst) {}
  [[nodiscard]] SimTime now() const override { return v_.now(); }
  [[nodiscard]] NodeId server() const override { return v_.server(); }
  bool post(std::uint32_t endpoint, const nic::WorkRequest& wr) override;
  std::size_t poll_cq(std::uint32_t endpoint, std::span<nic::Completion> out) override;
  [[nodiscard]] nic::QpState state(std::uint32_t endpoint) const override {
    return v_.state(global(endpoint));
  }
  void schedule(SimTime delay, const nic::AppTimer& timer) override;
  void send_in_network(PortId nic, const fabric::Packet& pkt) override;

 private:
  [[nodiscard]] std::uint32_t global(std::uint32_t endpoint) const {
    return inst_.to_global[endpoint / 2] * 2 + (endpoint & 1u);
  }
  nic::Verbs& v_;
  StepApp& app_;
  Instance& inst_;
};

/// Every GPU's stage program as one RDMA application over `plan` (which must outlive it).
class StepApp final : public nic::RdmaApp {
 public:
  StepApp(const StepPlan& plan, const Scenario& s);

  /// The bytes of the collectives' completed sends on this rank's servers (not background):
  /// each GPU's bus bytes, as the progress display's work curve counts them. Read at a window
  /// boundary.
  [[nodiscard]] std::uint64_t delivered_bytes() const;
  /// Whether every used GPU of this rank's servers has its program done (true without any).
  /// Read at a window boundary.
  [[nodiscard]] bool used_gpus_done() const;
  /// The last GPU's end over every rank (those done). Collective over `sync`.
  [[nodiscard]] SimTime last_gpu_end(pdes::Sync& sync) const;
  Result<StepTrace> collect(pdes::Sync& sync, nic::RdmaRun& run, bool stopped);

  void on_start(nic::Verbs& v) override;
  void on_cq(nic::Verbs& v, std::uint32_t endpoint) override;
  void on_timer(nic::Verbs& v, const nic::AppTimer& timer) override;

  // For InstanceVerbs.
  void schedule(nic::Verbs& v, SimTime delay, const Timer& t) {
    v.schedule(delay, server(v).timers.put(0, t));
  }

 private:
  ServerState& server(const nic::Verbs& v) { return servers_[idx(plan_.server_index[v.server()])]; }
  [[nodiscard]] const JobPlan& job_of(const GpuRun& g) const { return plan_.jobs[g.p->job]; }

  // GPU streams (gpu_streams.cpp).
  void advance(nic::Verbs& v, GpuRun& g);
  void compute(nic::Verbs& v, GpuRun& g, const StageOp& op, bool optimizer);
  void collective(nic::Verbs& v, GpuRun& g, const StageOp& op);
  static void pass_mark(GpuRun& g, const StageOp& op, SimTime now);
  void param_gather(nic::Verbs& v, GpuRun& g, const StageOp& op);
  static void record(ServerState& ss, const GpuRun& g, OpRecord r, SimTime start, SimTime end);
  void try_dp(nic::Verbs& v, GpuRun& g);
  void send(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void recv(nic::Verbs& v, GpuRun& g, const StageOp& op);
  void wake(nic::Verbs& v, GpuRun& g, SimTime now);
  bool beside_partner(nic::Verbs& v, GpuRun& g, const StageOp& op, SimTime now,
                      std::int64_t waited);

  // Collective instances (instances.cpp).
  void arrive(nic::Verbs& v, std::uint32_t comm, std::uint32_t seq, GpuRun* g, Stream stream);
  static Instance& instance(ServerState& ss, std::uint32_t comm, std::uint32_t seq);
  void create_app(Instance& inst);
  void start_folded(nic::Verbs& v, Instance& inst);
  void deliver(nic::Verbs& v, Instance& inst, std::uint32_t local_ep, nic::Completion c);
  void check_done(nic::Verbs& v, std::uint64_t key);
  void member_done(nic::Verbs& v, const Waiter& w);
  void retire(ServerState& ss, Instance& inst, SimTime now);
  void on_background_cq(nic::Verbs& v, std::uint32_t endpoint);

  // Gathering the trace (trace.cpp).
  Result<StepStop> collect_stages(pdes::Sync& sync, const nic::RdmaRun& run, bool stopped,
                                  StepTrace& trace);
  void collect_collectives(pdes::Sync& sync, StepTrace& trace) const;
  LogHistogram collect_records(pdes::Sync& sync, StepTrace& trace, double stop_s);
  void collect_traced(std::vector<OpRecord> all, StepTrace& trace) const;

  const StepPlan& plan_;
  const Scenario& s_;
  std::unique_ptr<std::atomic<std::int64_t>[]> rec_start_, rec_end_;  // by collective record
  std::vector<GpuRun> gpus_;          // by GPU of the topology (up to the last one used)
  std::vector<SimTime> nvlink_free_;  // by GPU
  std::vector<ServerState> servers_;  // by StepPlan::servers
  friend class InstanceVerbs;
};

}  // namespace stepsim::workload::whole_step
