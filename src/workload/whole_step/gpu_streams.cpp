// The whole step's GPU streams (runtime.hpp): each GPU's compute stream runs its stage program
// (compute, collectives, pipeline sends and receives, passes, the optimizer, the parameter
// gathers); its data-parallel stream runs the gradient buckets as they are released.
#include <algorithm>
#include <cmath>

#include "src/workload/whole_step/runtime.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload::whole_step {

StepApp::StepApp(const StepPlan& plan, const Scenario& s) : plan_(plan), s_(s) {
  rec_start_ = std::make_unique<std::atomic<std::int64_t>[]>(plan.records);
  rec_end_ = std::make_unique<std::atomic<std::int64_t>[]>(plan.records);
  for (std::uint64_t i = 0; i < plan.records; ++i) {
    rec_start_[i].store(-1, std::memory_order_relaxed);
    rec_end_[i].store(-1, std::memory_order_relaxed);
  }
  gpus_.resize(plan.gpus.size());
  for (std::size_t k = 0; k < gpus_.size(); ++k) {
    const GpuPlan& p = plan.gpus[k];
    gpus_[k].p = &p;
    // Sequence counters: one per reference group of the GPU's stage.
    if (p.used) gpus_[k].seq.assign(plan.jobs[p.job].stage_refs[idx(p.stage)].size(), 0);
  }
  nvlink_free_.assign(plan.gpus.size(), SimTime::zero());
  servers_.resize(plan.servers.size());
}

std::uint64_t StepApp::delivered_bytes() const {
  std::uint64_t b = 0;
  for (const ServerState& ss : servers_) b += ss.delivered;
  return b * plan_.rails;  // step.fold rails: rail 0's sends stand for every rail's
}

bool StepApp::used_gpus_done() const {
  for (std::size_t si = 0; si < servers_.size(); ++si) {
    if (!servers_[si].here) continue;
    for (std::uint32_t gi : plan_.servers[si].gpus) {
      if (plan_.gpus[gi].used && gpus_[gi].wait != Wait::kDone) return false;
    }
  }
  return true;
}

SimTime StepApp::last_gpu_end(pdes::Sync& sync) const {
  std::vector<std::int64_t> end{0};
  for (std::size_t si = 0; si < servers_.size(); ++si) {
    if (!servers_[si].here) continue;
    for (std::uint32_t gi : plan_.servers[si].gpus) {
      if (gpus_[gi].wait == Wait::kDone) end[0] = std::min(end[0], -gpus_[gi].end.picoseconds());
    }
  }
  sync.allreduce_min(end);
  return SimTime::ps(-end[0]);
}

void StepApp::on_start(nic::Verbs& v) {
  if (plan_.server_index[v.server()] < 0) return;
  server(v).here = true;
  const ServerPlan& sp = plan_.servers[idx(plan_.server_index[v.server()])];
  for (std::uint32_t b : sp.background) {
    schedule(v, SimTime::zero(), Timer{TimerKind::kBackground, b, 0, 0});
  }
  for (std::uint32_t g : sp.gpus) advance(v, gpus_[g]);
}

void StepApp::record(ServerState& ss, const GpuRun& g, OpRecord r, SimTime start, SimTime end) {
  if (!g.p->records()) return;
  r.job = g.p->job;
  r.stage = static_cast<std::uint32_t>(g.p->stage);
  r.start_s = start.seconds();
  r.end_s = end.seconds();
  r.gpu = g.p->gpu;
  if (g.p->reference) ss.ops.push_back(r);
  if (g.p->trace_source) ss.trace_ops.push_back(r);
}

// Compute (or, `optimizer`, the optimizer step) for the op's time, scaled by a straggler's
// factor; the stream goes on when its timer fires.
void StepApp::compute(nic::Verbs& v, GpuRun& g, const StageOp& op, bool optimizer) {
  const SimTime now = v.now();
  const SimTime dt = SimTime::ps(std::llround(op.seconds * g.p->slowdown * 1e12));
  record(server(v), g, op.record, now, now + dt);
  if (optimizer) {
    g.optimizer += dt.picoseconds();
    g.opt_end = now + dt;
  } else {
    g.compute += dt.picoseconds();
  }
  ++g.pc;
  g.wait = Wait::kTimer;
  schedule(v, dt, Timer{TimerKind::kCompute, g.p->gpu, 0, 0});
}

// A blocking collective: the GPU arrives at its copy's next instance and waits.
void StepApp::collective(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const JobPlan& j = job_of(g);
  const std::uint32_t comm = plan_.comm_of(*g.p, op.comm);
  const std::uint32_t seq = g.seq[j.stage_op_local[idx(g.p->stage)][op.comm]]++;
  ++g.pc;
  g.wait = Wait::kCollective;
  g.since = v.now();
  g.wait_group = j.progs[idx(g.p->stage)].comm_ops[op.comm].group;
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
  const StageProgram& p = job_of(g).progs[idx(g.p->stage)];
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
      case StageOpKind::kBody:  // StageProgramStream's only
        STEPSIM_CHECK(false, "whole step: a kBody op in a stage program");
        return;
    }
  }
  if (g.wait != Wait::kDone) {
    g.end = now;
    g.wait = Wait::kDone;
  }
}

// moe.overlap 1f1b: the partner pass's compute (op.beside_s, moved into this EP collective by
// the stage program) ran beside it, on the SMs the EP kernels leave (moe.comm_sms): the stream
// goes on when both are through, max(comm, beside) plus the slow-down over the overlap. True:
// it waits on a timer for the rest.
bool StepApp::beside_partner(nic::Verbs& v, GpuRun& g, const StageOp& op, SimTime now,
                             std::int64_t waited) {
  const Scenario& s = job_of(g).s;
  const int sms = std::max(s.gpu.sms, 1);
  const int held = std::clamp(s.moe.comm_sms, 0, sms - 1);
  const double slow = static_cast<double>(held) / (sms - held);
  const std::int64_t beside = std::llround(op.beside_s * g.p->slowdown * 1e12);
  const std::int64_t hidden = std::min(waited, beside);
  const std::int64_t extra = std::llround(static_cast<double>(hidden) * slow);
  const SimTime both = SimTime::ps(std::max(waited, beside) + extra);
  g.compute += beside + extra;
  g.exposed[static_cast<int>(CommGroup::kEp)] += waited - hidden;
  g.ep_hidden += hidden;
  record(server(v), g, op.record, g.since, g.since + SimTime::ps(beside + extra));
  if (waited > beside && g.p->records()) {
    OpRecord r;
    r.kind = OpKind::kComm;
    r.group = CommGroup::kEp;
    record(server(v), g, r, g.since + SimTime::ps(beside + extra), g.since + both);
  }
  if (g.since + both <= now) return false;
  g.wait = Wait::kTimer;
  schedule(v, g.since + both - now, Timer{TimerKind::kCompute, g.p->gpu, 0, 0});
  return true;
}

// A GPU's wait is over at `now`: account for it and go on.
void StepApp::wake(nic::Verbs& v, GpuRun& g, SimTime now) {
  const std::int64_t waited = (now - g.since).picoseconds();
  switch (g.wait) {
    case Wait::kCollective: {
      const StageProgram& p = job_of(g).progs[idx(g.p->stage)];
      const StageOp& op = p.ops[g.pc - 1];
      const CommOp& c = p.comm_ops[op.comm];
      if (op.beside_s > 0) {
        if (beside_partner(v, g, op, now, waited)) return;
        break;
      }
      if (c.overlap_s > 0) {
        // Megatron's TP overlap: the GEMM ran beside the collective; the stream goes on when
        // both are through (overlapped_seconds), perhaps after the collective.
        const SimTime gemm = SimTime::ps(std::llround(c.overlap_s * g.p->slowdown * 1e12));
        const SimTime both =
            SimTime::ps(std::llround(overlapped_seconds(static_cast<double>(waited) * 1e-12,
                                                        gemm.seconds(), c.overlap_chunks) *
                                     1e12));
        g.compute += gemm.picoseconds();
        g.exposed[static_cast<int>(g.wait_group)] += (both - gemm).picoseconds();
        record(server(v), g, op.record, g.since, g.since + gemm);
        if (both > gemm && g.p->records()) {
          OpRecord r;
          r.kind = OpKind::kComm;
          r.group = g.wait_group;
          record(server(v), g, r, g.since + gemm, g.since + both);
        }
        if (g.since + both > now) {
          g.wait = Wait::kTimer;
          schedule(v, g.since + both - now, Timer{TimerKind::kCompute, g.p->gpu, 0, 0});
          return;
        }
        break;
      }
      g.exposed[static_cast<int>(g.wait_group)] += waited;
      if (waited > 0 && g.p->records()) {
        OpRecord r;
        r.kind = OpKind::kComm;
        r.group = g.wait_group;
        record(server(v), g, r, g.since, now);
      }
      break;
    }
    case Wait::kRecv:
      g.bubble += waited;
      if (waited > 0 && g.p->records()) {
        OpRecord w;
        w.kind = OpKind::kWait;
        const StageOp& op = job_of(g).progs[idx(g.p->stage)].ops[g.pc - 1];
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
      if (job_of(g).progs[idx(g.p->stage)].ops[g.pc].kind != StageOpKind::kParamGather) {
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
  const JobPlan& j = job_of(g);
  const std::uint32_t c = j.progs[idx(g.p->stage)].dp[g.dp_done];
  const std::uint32_t comm = plan_.comm_of(*g.p, c);
  const std::uint32_t seq = g.seq[j.stage_op_local[idx(g.p->stage)][c]]++;
  g.dp_busy = true;
  arrive(v, comm, seq, &g, Stream::kDp);
}

void StepApp::send(nic::Verbs& v, GpuRun& g, const StageOp& op) {
  const std::uint32_t comm = plan_.pipeline_comm(g.p->gpu, op.pass, op.chunk, op.peer);
  if (!plan_.comms[comm].folded) {
    arrive(v, comm, op.micro, nullptr, Stream::kNone);
    return;
  }
  // In one server: the data is in after the memoized time, from when the sender's NVLink is
  // free; the reader (same server) is woken then if it waits.
  ServerState& ss = server(v);
  const CommInfo& ci = plan_.comms[comm];
  const CommCost& cost =
      plan_.folded_cost(ci.job, collective::Kind::kSend, ci.send_bytes, std::size_t{2});
  SimTime& free = nvlink_free_[g.p->gpu];
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
  const JobPlan& j = job_of(g);
  const std::uint32_t src = j.gpus[j.place.rank(g.p->t, g.p->c, g.p->d, op.peer)];
  const std::uint32_t comm = plan_.pipeline_comm(src, op.pass, op.chunk, g.p->stage);
  g.wait = Wait::kRecv;
  g.since = v.now();
  if (!plan_.comms[comm].folded) {
    arrive(v, comm, op.micro, &g, Stream::kCompute);
    return;
  }
  ServerState& ss = server(v);
  const std::uint64_t key = key_of(comm, op.micro);
  if (auto it = ss.mail.find(key); it != ss.mail.end()) {
    const SimTime in = it->second;
    ss.mail.erase(it);
    schedule(v, std::max(in, v.now()) - v.now(), Timer{TimerKind::kMail, g.p->gpu, key, 0});
  } else {
    ss.reader[key] = g.p->gpu;
  }
}

}  // namespace stepsim::workload::whole_step
