// The whole step's collective instances (runtime.hpp): a collective (communicator, sequence
// number) starts its part on a server when that server's members have all arrived; folded ones
// take their memoized time; completions reach the instance's algorithm through its own verbs;
// a finished part retires into its record and flow rows.
#include <algorithm>
#include <cmath>

#include "src/workload/whole_step/runtime.hpp"
#include "stepsim/collective/algorithm_run.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::workload::whole_step {
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

std::size_t InstanceVerbs::poll_cq(std::uint32_t /*endpoint*/, std::span<nic::Completion> /*out*/) {
  fatal("whole step: a collective polled its CQ itself");
}

void InstanceVerbs::send_in_network(PortId /*nic*/, const fabric::Packet& /*pkt*/) {
  fatal("whole step: in-network packets (SHARP) are not run in the whole step");
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
  const CommInfo& ci = plan_.comms[inst.comm];
  const CommOp op = plan_.op_of(inst.comm, inst.seq);
  const collective::CollectiveParams& p = plan_.params_at(inst.comm, op.kind, op.bytes);
  collective::CollectiveSpec spec;
  spec.kind = op.kind;
  spec.bytes = op.bytes;
  inst.app = std::make_unique<collective::CollectiveApp>(ci.comm, spec, p);
  inst.base_latency = p.base_latency();
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
  inst.flows.assign(2 * local.size(), FlowRow{});
  for (std::uint32_t r = 0; r < ci.gpus.size(); ++r) {
    inst.app->share_nvlink(r, &nvlink_free_[ci.gpus[r]]);
  }
}

// A member (`g`, or nobody for an asynchronous send) reaches instance (comm, seq) on its server.
void StepApp::arrive(nic::Verbs& v, std::uint32_t comm, std::uint32_t seq, GpuRun* g,
                     Stream stream) {
  ServerState& ss = server(v);
  const CommInfo& ci = plan_.comms[comm];
  Instance& inst = instance(ss, comm, seq);
  const std::vector<std::uint32_t>* ranks = ci.ranks_on(v.server());
  STEPSIM_CHECK(ranks != nullptr, "whole step: a GPU arrived at a collective it is not in");
  // Mirrors (step.fold rails) never arrive.
  inst.members =
      static_cast<std::size_t>(std::count_if(ranks->begin(), ranks->end(), [&](std::uint32_t r) {
        return plan_.gpus[ci.gpus[r]].mirror == kNone32;
      }));
  const std::uint32_t gpu = g != nullptr ? g->p->gpu : ci.gpus[0];
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
  const CommInfo& ci = plan_.comms[inst.comm];
  const CommOp op = plan_.op_of(inst.comm, inst.seq);
  const CommCost& cost = plan_.folded_cost(ci.job, op.kind, op.bytes, op.gpus.size());
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
      const BackgroundFlow& b = plan_.background[t.gpu];
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

// A background flow's writes completed: counted, nothing waits for them.
void StepApp::on_background_cq(nic::Verbs& v, std::uint32_t endpoint) {
  ServerState& ss = server(v);
  std::array<nic::Completion, 16> wc;
  std::size_t k;
  while ((k = v.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < k; ++i) {
      if (wc[i].status != nic::WcStatus::kSuccess) ++ss.failed;
      ss.background_bytes += static_cast<std::uint64_t>(wc[i].bytes);
    }
  }
}

void StepApp::on_cq(nic::Verbs& v, std::uint32_t endpoint) {
  const std::uint32_t comm = plan_.conn_comm[endpoint / 2];
  if (comm == kBackgroundComm) {
    on_background_cq(v, endpoint);
    return;
  }
  ServerState& ss = server(v);
  std::array<nic::Completion, 16> wc;
  std::size_t k;
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
  FlowRow& f = inst.flows[c.recv ? (local_ep ^ 1u) : local_ep];
  if (c.recv) {
    f.ecn_marked += c.ecn_marked;
  } else {
    --inst.outstanding;
    f.bytes += static_cast<std::uint64_t>(c.bytes);
    ++f.messages;
    f.packets += c.packets;
    f.retransmitted += c.retransmitted;
    const std::int64_t posted = c.posted.picoseconds();
    f.start_ps = f.start_ps < 0 ? posted : std::min(f.start_ps, posted);
    const std::int64_t first = c.first_byte.picoseconds() > 0 ? c.first_byte.picoseconds() : posted;
    f.first_byte_ps = f.first_byte_ps < 0 ? first : std::min(f.first_byte_ps, first);
    f.end_ps = std::max(f.end_ps, c.done.picoseconds());
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
  const CommInfo& ci = plan_.comms[inst.comm];
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
  const CommOp op = plan_.op_of(inst.comm, inst.seq);
  std::map<std::pair<PortId, PortId>, FlowRow> rows;
  for (std::uint32_t ep = 0; ep < inst.flows.size(); ++ep) {
    const FlowRow& f = inst.flows[ep];
    if (f.messages == 0 && f.ecn_marked == 0) continue;
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
      r.src_gpu = plan_.gpu_of_nic[src];
      r.dst_gpu = plan_.gpu_of_nic[dst];
      r.group = op.group;
      r.kind = op.kind;
    }
    stat::combine(r, f);
  }
  for (auto& [ab, r] : rows) ss.flows.push_back(r);
}

}  // namespace stepsim::workload::whole_step
