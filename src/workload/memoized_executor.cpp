// The memoized step executor (see memoized_executor.hpp).
#include "src/workload/memoized_executor.hpp"

#include <algorithm>

#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {

using collective::Kind;

namespace {
std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}
std::size_t idx(PassKind k) {
  return static_cast<std::size_t>(k);
}
}  // namespace

MemoizedExecutor::MemoizedExecutor(const Scenario& s, CommModel& comm, Progress progress,
                                   bool records)
    : s_(s),
      comm_(comm),
      progress_(std::move(progress)),
      records_(records),
      repeats_free_(comm.repeats_free()),
      shape_(pipeline_shape(s)),
      place_{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp},
      send_bytes_(stage_send_bytes(s)),
      ep_overlap_(s, shape_),
      programs_(s, ProgramUse::kMemoized) {
  const int P = shape_.stages;
  trace_.stages.resize(idx(P));
  stages_.resize(idx(P));
  for (int st = 0; st < P; ++st) {
    Stage& g = stages_[idx(st)];
    g.prog = &programs_.program(st);
    g.repeated.resize(g.prog->repeated);
    for (std::uint32_t c = 0; c < g.prog->repeated; ++c) {
      StableOp& o = g.repeated[c];
      o.op = g.prog->comm_ops[c];
      o.free = is_free(o.op);
      // A free collective costs 0: only the GEMM beside it is left.
      if (o.free)
        o.after_overlap =
            overlapped_seconds(0, o.op.overlap_s, o.op.overlap_chunks) - o.op.overlap_s;
    }
  }
  for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
    fin_[idx(k)].assign(idx(P * shape_.chunks * shape_.micro_batches), -1.0);
  }
}

double& MemoizedExecutor::finished(PassKind kind, int st, std::uint32_t c, std::uint32_t mb) {
  return fin_[idx(kind)][idx((st * shape_.chunks + static_cast<int>(c)) * shape_.micro_batches +
                             static_cast<int>(mb))];
}

Error MemoizedExecutor::interrupt() {
  trace_.stop = StepStop::kInterrupted;
  return Error{"the step was interrupted"};
}

Result<StepTrace> MemoizedExecutor::run() {
  auto ok = run_schedules();
  if (ok && trace_.stop == StepStop::kDone) {
    for (int st = 0; st < shape_.stages && ok; ++st) ok = run_tail(st);
  }
  for (std::size_t st = 0; st < stages_.size(); ++st) trace_.stages[st] = stages_[st].time;
  if (!ok && trace_.stop != StepStop::kInterrupted) return ok.error();
  return std::move(trace_);
}

// Runs each stage's passes as far as their inputs allow, stage after stage, until every
// stage is through its passes (or one passes `end`).
Result<bool> MemoizedExecutor::run_schedules() {
  const double end = s_.end.seconds();
  bool all = false;
  while (!all) {
    all = true;
    bool moved = false;
    for (int st = 0; st < shape_.stages; ++st) {
      Stage& g = stages_[idx(st)];
      while (!g.passes_done) {
        auto ran = run_group(st, end);
        if (!ran) return ran.error();
        if (*ran == Group::kBlocked || *ran == Group::kDone) break;
        if (!reserved_) reserve_records();
        moved = true;
        if (*ran == Group::kEnd) {
          trace_.stop = StepStop::kEnd;
          return true;
        }
      }
      if (!g.passes_done) all = false;
    }
    STEPSIM_CHECK(all || moved, "pipeline schedule made no progress");
  }
  return true;
}

// After the step's first group (a forward pass, or DualPipe's first): room for about all the
// records, from that group's. A backward pass records about twice a forward's (its two GEMMs per
// forward one, their collectives, a recomputed forward): 4 times the forward's per micro-batch and
// chunk leaves slack, and a wait between passes. Reserved, not touched: the growth of the
// vectors otherwise touches twice the memory, each page a fault (a tenth of an analytical run).
void MemoizedExecutor::reserve_records() {
  reserved_ = true;
  if (!records_) return;
  const auto passes = static_cast<std::size_t>(shape_.stages) *
                      static_cast<std::size_t>(shape_.chunks) *
                      static_cast<std::size_t>(shape_.micro_batches);
  trace_.ops.reserve(passes * (4 * trace_.ops.size() + 2));
  trace_.colls.reserve(passes * 4 * trace_.colls.size());
}

// The passes that start together at the stage's next op: a pass, or DualPipe's F&B pair (the
// forward, its partner backward next), which starts when both inputs are in, then runs the two
// one after the other. Blocked while a pipeline send it receives has not been produced.
Result<MemoizedExecutor::Group> MemoizedExecutor::run_group(int st, double end) {
  Stage& g = stages_[idx(st)];
  std::vector<StageOp>& ops = g.prog->ops;
  if (g.pc == ops.size()) {
    // The last group ran: the next one replaces it.
    ops.clear();
    g.pc = 0;
    if (!programs_.next_group(st)) {
      g.passes_done = true;
      return Group::kDone;
    }
  }
  std::size_t pc = g.pc;
  for (; ops[pc].kind == StageOpKind::kRecv; ++pc) {
    if (!input_known(ops[pc])) return Group::kBlocked;
  }
  const bool fast = repeats_free_ && !records_;
  double ready = 0;
  for (; g.pc < pc; ++g.pc) {
    auto at = input_ready(st, ops[g.pc]);
    if (!at) return at.error();
    ready = std::max(ready, *at);
  }
  for (;;) {
    const StageOp& op = ops[g.pc++];
    if (op.kind == StageOpKind::kPassStart) {
      // The compute stream idles until the input is in (the pair's second pass: it is).
      wait_until(st, op, ready);
      g.pass_start = g.time.t;
      continue;
    }
    if (op.kind == StageOpKind::kCompute) {
      compute(st, op);
      continue;
    }
    if (op.kind == StageOpKind::kCollective) {
      // Without records or anything beside, a collective costed before takes blocking_known's
      // few additions (the same ones blocking() makes, in the same order).
      StableOp& stable = g.repeated[op.comm];
      if (fast && op.beside_s == 0 && (stable.known || stable.free)) {
        blocking_known(st, stable);
        continue;
      }
      if (auto ok = blocking(st, stable, op.record, op.beside_s); !ok) return ok.error();
      continue;
    }
    if (op.kind == StageOpKind::kSend) continue;  // the first pass's of a pair
    if (op.kind != StageOpKind::kPassEnd) {
      if (auto ok = run_op(st, op); !ok) return ok.error();
      continue;
    }
    // A weight-gradient pass (W) hands nothing on: its backward's input gradient did.
    if (op.grad != GradPart::kWeight) finished(op.pass, st, op.chunk, op.micro) = g.time.t;
    if (op.pass == PassKind::kForward && g.first_fwd_s < 0) {
      g.first_fwd_s = g.time.t - g.pass_start;
    }
    if (progress_ && !progress_(g.time.t)) return interrupt();
    if (!op.paired) break;
  }
  // The pass's sends: costed when their receiver takes them (input_ready).
  while (g.pc < ops.size() && ops[g.pc].kind == StageOpKind::kSend) ++g.pc;
  return g.time.t > end ? Group::kEnd : Group::kRan;
}

// One op of a pass on the compute stream.
Result<bool> MemoizedExecutor::run_op(int st, const StageOp& op) {
  Stage& g = stages_[idx(st)];
  switch (op.kind) {
    case StageOpKind::kRelease:
      return release_dp(st, op.dp);
    case StageOpKind::kWaitDp: {
      // FSDP: the layer's parameters (gathered while the layer before it computed).
      const double mine = g.dp_end[op.dp];
      if (mine > g.time.t) {
        g.time.exposed[static_cast<int>(CommGroup::kDp)] += mine - g.time.t;
        g.time.t = mine;
      }
      return true;
    }
    default:
      STEPSIM_CHECK(false, "memoized step: a stage op out of place in a pass");
      return true;
  }
}

// Whether the producer of the input a pass receives has run.
bool MemoizedExecutor::input_known(const StageOp& recv) {
  return finished(recv.pass, recv.peer, recv.chunk, recv.micro) >= 0;
}

// When the input is at this stage: the producing pass's end plus the pipeline send.
Result<double> MemoizedExecutor::input_ready(int st, const StageOp& recv) {
  const double done = finished(recv.pass, recv.peer, recv.chunk, recv.micro);
  auto d = run_comm(recv.peer, pipeline_send(recv.peer, st), done);
  if (!d) return d.error();
  return done + *d;
}

// The send of an activation (or its gradient) from stage `from` to stage `to`.
MemoizedExecutor::StableOp& MemoizedExecutor::pipeline_send(int from, int to) {
  auto [it, fresh] = sends_.try_emplace({from, to});
  if (fresh) {
    it->second.op = CommOp{Kind::kSend,
                           send_bytes_,
                           {place_.rank(0, 0, 0, from), place_.rank(0, 0, 0, to)},
                           CommGroup::kPp};
  }
  return it->second;
}

// The compute stream idles until the pass's input is in: a bubble.
void MemoizedExecutor::wait_until(int st, const StageOp& pass, double ready) {
  StageTime& g = stages_[idx(st)].time;
  if (ready <= g.t) return;
  OpRecord w;
  w.stage = static_cast<std::uint32_t>(st);
  w.kind = OpKind::kWait;
  w.micro = pass.micro;
  w.chunk = pass.chunk;
  w.start_s = g.t;
  w.end_s = ready;
  add_op(w);
  g.bubble += ready - g.t;
  g.t = ready;
}

void MemoizedExecutor::compute(int st, const StageOp& op) {
  StageTime& g = stages_[idx(st)].time;
  OpRecord r = op.record;
  r.start_s = g.t;
  g.t += op.seconds;
  g.compute += op.seconds;
  r.end_s = g.t;
  add_op(r);
}

// Starts the data-parallel ops released up to `upto` (exclusive), one after another on the
// data-parallel stream, from now on.
Result<bool> MemoizedExecutor::release_dp(int st, std::uint32_t upto) {
  Stage& g = stages_[idx(st)];
  if (g.dp_end.size() < upto) g.dp_end.resize(upto, 0.0);
  for (; g.dp_next < upto; ++g.dp_next) {
    const std::uint32_t c = g.prog->dp[g.dp_next];
    const double start = std::max(g.time.t, g.dp_free);
    auto d = c < g.prog->repeated ? run_comm(st, g.repeated[c], start)
                                  : run_comm(st, g.prog->comm_ops[c], start);
    if (!d) return d.error();
    g.dp_free = start + *d;
    g.dp_end[g.dp_next] = g.dp_free;
  }
  return true;
}

// Data parallelism's tail (the last buckets, DualPipe's mirror all-reduce), the optimizer when
// the data-parallel stream is through, and (ZeRO 1/2) the parameter all-gather.
Result<bool> MemoizedExecutor::run_tail(int st) {
  Stage& g = stages_[idx(st)];
  g.prog->ops.clear();
  programs_.tail(st);
  for (std::size_t pc = g.prog->passes_end; pc < g.prog->ops.size(); ++pc) {
    const StageOp& op = g.prog->ops[pc];
    if (op.kind == StageOpKind::kRelease) {
      if (auto ok = release_dp(st, op.dp); !ok) return ok;
    } else if (op.kind == StageOpKind::kOptimizer) {
      if (g.dp_free > g.time.t) {
        g.time.exposed[static_cast<int>(CommGroup::kDp)] += g.dp_free - g.time.t;
        g.time.t = g.dp_free;
      }
      OpRecord r = op.record;
      r.start_s = g.time.t;
      g.time.t += op.seconds;
      r.end_s = g.time.t;
      add_op(r);
      g.time.optimizer = op.seconds;
    } else if (op.kind == StageOpKind::kParamGather) {
      if (auto ok = param_gather(st, op.dp); !ok) return ok;
    } else {
      STEPSIM_CHECK(false, "memoized step: a stage op out of place in the tail");
    }
  }
  return true;
}

// ZeRO 1/2: the updated parameters (bf16), bucket by bucket (prog.dp from param_gather_first up
// to `upto`). Overlapped with the next step's first forward pass (the steady state of
// back-to-back steps), only what outlasts that pass is exposed.
Result<bool> MemoizedExecutor::param_gather(int st, std::uint32_t upto) {
  Stage& g = stages_[idx(st)];
  double gather = 0;
  for (std::uint32_t i = g.prog->param_gather_first; i < upto; ++i) {
    auto d = run_comm(st, g.prog->comm_ops[g.prog->dp[i]], g.time.t + gather);
    if (!d) return d.error();
    gather += *d;
  }
  const double hidden = s_.par.overlap_param_gather ? std::max(0.0, g.first_fwd_s) : 0.0;
  const double exposed = std::max(0.0, gather - hidden);
  g.time.t += exposed;
  g.time.exposed[static_cast<int>(CommGroup::kDp)] += exposed;
  return true;
}

// Costs a collective that starts at `start`, records it, and returns its duration.
Result<double> MemoizedExecutor::run_comm(int st, const CommOp& op, double start) {
  if (op.bytes <= 0 || op.gpus.size() < 2) return 0.0;
  auto c = comm_.cost(op);
  if (!c) return c.error();
  if (c->stopped) return interrupt();
  const std::uint32_t id = next_id_;
  const std::uint32_t* hit = recent_.find(op);
  const std::uint32_t index = hit != nullptr ? *hit : distinct_index(op, *c, id);
  record(st, op, start, *c, index);
  return c->seconds;
}

// The same for a collective built once: the comm model (where its repeats are free) and the
// distinct collectives are asked the first time only.
Result<double> MemoizedExecutor::run_comm(int st, StableOp& op, double start) {
  if (!repeats_free_) return run_comm(st, op.op, start);
  if (op.known) {
    record(st, op.op, start, op.cost, op.distinct);
    return op.cost.seconds;
  }
  if (op.op.bytes <= 0 || op.op.gpus.size() < 2) return 0.0;
  auto c = comm_.cost(op.op);
  if (!c) return c.error();
  if (c->stopped) return interrupt();
  const std::uint32_t id = next_id_;
  op.distinct = distinct_index(op.op, *c, id);
  op.cost = *c;
  op.known = true;
  op.after_overlap =
      overlapped_seconds(c->seconds, op.op.overlap_s, op.op.overlap_chunks) - op.op.overlap_s;
  record(st, op.op, start, *c, op.distinct);
  return c->seconds;
}

// The index of `op` among the step's distinct collectives (a new one: `id` is its first record).
std::uint32_t MemoizedExecutor::distinct_index(const CommOp& op, const CommCost& c,
                                               std::uint32_t id) {
  const auto next = static_cast<std::uint32_t>(trace_.distinct.size());
  auto [it, first] = distinct_.emplace(key_of(op), next);
  if (first) trace_.distinct.push_back(DistinctCollective{id, 0, c});
  recent_.put(op, it->second);
  return it->second;
}

void MemoizedExecutor::record(int st, const CommOp& op, double start, const CommCost& c,
                              std::uint32_t distinct) {
  ++trace_.distinct[distinct].repeats;
  const std::uint32_t id = next_id_++;
  if (!records_) return;
  CollectiveRecord rec;
  rec.id = id;
  rec.stage = static_cast<std::uint32_t>(st);
  rec.group = op.group;
  rec.kind = op.kind;
  rec.bytes = op.bytes;
  rec.gpus = static_cast<std::uint32_t>(op.gpus.size());
  rec.start_s = start;
  rec.end_s = start + c.seconds;
  rec.busbw_gbs = c.busbw_gbs;
  trace_.colls.push_back(rec);
}

// blocking() of a collective costed before (or free) with nothing beside it and no records:
// the repeat counted, the GEMM beside it (TP overlap) and what is left exposed added.
void MemoizedExecutor::blocking_known(int st, StableOp& op) {
  StageTime& g = stages_[idx(st)].time;
  double exposed = 0;
  if (!op.free) {
    ++trace_.distinct[op.distinct].repeats;
    ++next_id_;
    exposed = op.cost.seconds;
  }
  if (op.op.overlap_s > 0) {
    g.compute += op.op.overlap_s;
    g.t += op.op.overlap_s;
    exposed = op.after_overlap;
  }
  if (exposed <= 0) return;
  g.t += exposed;
  g.exposed[static_cast<int>(op.op.group)] += exposed;
}

// A collective on the compute stream: the stream waits for it.
Result<bool> MemoizedExecutor::blocking(int st, StableOp& stable, const OpRecord& base,
                                        double beside_s) {
  const CommOp& op = stable.op;
  StageTime& g = stages_[idx(st)].time;
  auto cost = run_comm(st, stable, g.t);
  if (!cost) return cost.error();
  double exposed = *cost;
  if (beside_s > 0) {
    // moe.overlap: hidden behind the partner pass; its compute slowed by the SMs held.
    const auto [left, slower] = ep_overlap_.split(exposed, beside_s);
    g.t += slower;
    g.compute += slower;
    g.ep_hidden += exposed - left;
    exposed = left;
  }
  if (op.overlap_s > 0) {
    // Megatron's TP overlap: the GEMM beside it runs now (it is not in the layer's compute).
    const double both = overlapped_seconds(exposed, op.overlap_s, op.overlap_chunks);
    OpRecord c = base;
    c.start_s = g.t;
    c.end_s = g.t + op.overlap_s;
    add_op(c);
    g.compute += op.overlap_s;
    g.t += op.overlap_s;
    exposed = both - op.overlap_s;
  }
  if (exposed <= 0) return true;
  OpRecord r = base;
  r.kind = OpKind::kComm;
  r.group = op.group;
  r.start_s = g.t;
  r.end_s = g.t + exposed;
  add_op(r);
  g.t += exposed;
  g.exposed[static_cast<int>(op.group)] += exposed;
  return true;
}

}  // namespace stepsim::workload
