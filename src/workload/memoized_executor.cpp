// The memoized step executor (see memoized_executor.hpp).
#include "src/workload/memoized_executor.hpp"

#include <algorithm>

#include "src/workload/dualpipe_mirror.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/layer_comm.hpp"

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
      lc_{layer_costs(s, false), layer_costs(s, true)},
      send_bytes_(pipeline_send_bytes(s)),
      ep_overlap_(s, shape_) {
  const int P = shape_.stages;
  trace_.stages.resize(idx(P));
  stages_.reserve(idx(P));
  for (int st = 0; st < P; ++st) {
    stages_.emplace_back(GradientBuckets(s, place_, st));
    stages_.back().passes = stage_schedule(shape_, st);
    stages_.back().fsdp_gather.op = fsdp_gather_op(s, place_, st);
  }
  for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
    for (int st = 0; st < P; ++st) {
      for (const bool moe : {false, true}) {
        LayerOps& ops = layer_ops_[idx(k)][moe ? 1 : 0].emplace_back();
        for (CommOp& op : layer_collectives(s, place_, st, k, moe)) {
          StableOp& o = ops.ops.emplace_back();
          o.op = std::move(op);
          o.free = is_free(o.op);
          // A free collective costs 0: only the GEMM beside it is left.
          if (o.free)
            o.after_overlap =
                overlapped_seconds(0, o.op.overlap_s, o.op.overlap_chunks) - o.op.overlap_s;
          ops.ep += o.op.group == CommGroup::kEp ? 1 : 0;
        }
      }
    }
    fin_[idx(k)].assign(idx(P * shape_.chunks * shape_.micro_batches), -1.0);
  }
}

double& MemoizedExecutor::finished(PassKind kind, int st, int c, int mb) {
  return fin_[idx(kind)][idx((st * shape_.chunks + c) * shape_.micro_batches + mb)];
}

Error MemoizedExecutor::interrupt() {
  trace_.stop = StepStop::kInterrupted;
  return Error{"the step was interrupted"};
}

Result<StepTrace> MemoizedExecutor::run() {
  auto ok = run_schedules();
  if (ok && trace_.stop == StepStop::kDone) {
    for (int st = 0; st < shape_.stages && ok; ++st) ok = finish_stage(st);
  }
  for (std::size_t st = 0; st < stages_.size(); ++st) trace_.stages[st] = stages_[st].time;
  if (!ok && trace_.stop != StepStop::kInterrupted) return ok.error();
  return std::move(trace_);
}

// Runs each stage's passes as far as their inputs allow, stage after stage, until every
// stage is through its schedule (or one passes `end`).
Result<bool> MemoizedExecutor::run_schedules() {
  const double end = s_.end.seconds();
  bool all = false;
  while (!all) {
    all = true;
    bool moved = false;
    for (int st = 0; st < shape_.stages; ++st) {
      Stage& g = stages_[idx(st)];
      while (g.next < g.passes.size()) {
        const PipelinePass pass = g.passes[g.next];
        // DualPipe's F&B pair (the forward, its partner backward next) starts when both
        // inputs are in, then runs the two one after the other on the stream.
        const bool pair = shape_.dualpipe && pass.kind == PassKind::kForward && pass.partner >= 0;
        const std::size_t n = pair ? 2 : 1;
        if (!input_known(st, pass) || (pair && !input_known(st, g.passes[g.next + 1]))) break;
        double at = 0;
        for (std::size_t i = 0; i < n; ++i) {
          auto ready = input_ready(st, g.passes[g.next + i]);
          if (!ready) return ready.error();
          at = std::max(at, *ready);
        }
        for (std::size_t i = 0; i < n; ++i) {
          const PipelinePass& q = g.passes[g.next + i];
          if (auto ok = run_pass(st, q, at); !ok) return ok;
          // A weight-gradient pass (W) hands nothing on: its backward's input gradient did.
          if (q.grad != GradPart::kWeight) finished(q.kind, st, q.chunk, q.micro) = g.time.t;
        }
        g.next += n;
        moved = true;
        if (g.time.t > end) {
          trace_.stop = StepStop::kEnd;
          return true;
        }
      }
      if (g.next < g.passes.size()) all = false;
    }
    STEPSIM_CHECK(all || moved, "pipeline schedule made no progress");
  }
  return true;
}

// Whether the producer of a pass's input has run (a weight-gradient pass follows its own
// backward on this stage's stream).
bool MemoizedExecutor::input_known(int st, const PipelinePass& pass) {
  if (pass.grad == GradPart::kWeight) return true;
  const PassInput in = input_of(shape_, st, pass.kind, pass.chunk);
  return in.external || finished(in.kind, in.stage, in.chunk, pass.micro) >= 0;
}

// When the input of a pass is at this stage (-1: not yet known): the producing pass's end plus
// the pipeline send, when it ran on another stage.
Result<double> MemoizedExecutor::input_ready(int st, const PipelinePass& pass) {
  if (pass.grad == GradPart::kWeight) return 0.0;
  const PassInput in = input_of(shape_, st, pass.kind, pass.chunk);
  if (in.external) return 0.0;
  const double done = finished(in.kind, in.stage, in.chunk, pass.micro);
  if (done < 0) return -1.0;
  if (in.stage == st) return done;
  auto d = run_comm(in.stage, pipeline_send(in.stage, st), done);
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
void MemoizedExecutor::wait_until(int st, const PipelinePass& pass, double ready) {
  StageTime& g = stages_[idx(st)].time;
  if (ready <= g.t) return;
  OpRecord w;
  w.stage = static_cast<std::uint32_t>(st);
  w.kind = OpKind::kWait;
  w.micro = static_cast<std::uint32_t>(pass.micro);
  w.chunk = static_cast<std::uint32_t>(pass.chunk);
  w.start_s = g.t;
  w.end_s = ready;
  add_op(w);
  g.bubble += ready - g.t;
  g.t = ready;
}

Result<bool> MemoizedExecutor::run_pass(int st, const PipelinePass& pass, double ready) {
  wait_until(st, pass, ready);
  Stage& g = stages_[idx(st)];
  const bool fwd = pass.kind == PassKind::kForward;
  const int n_layers = layers_in(shape_, s_.model.layers, st, pass.chunk);
  const int first = first_layer(shape_, s_.model.layers, st, pass.chunk);
  double fsdp_ready = 0;  // FSDP: when the next layer's parameters are in
  const double op_start = g.time.t;
  for (int k = 0; k < n_layers; ++k) {
    const int layer = fwd ? k : n_layers - 1 - k;
    OpRecord r;
    r.stage = static_cast<std::uint32_t>(st);
    r.kind = fwd ? OpKind::kForward : OpKind::kBackward;
    r.micro = static_cast<std::uint32_t>(pass.micro);
    r.chunk = static_cast<std::uint32_t>(pass.chunk);
    r.layer = static_cast<std::uint32_t>(first + layer);
    if (s_.par.zero == 3) {
      if (auto ok = fsdp_wait(st, k, n_layers, fsdp_ready); !ok) return ok;
    }
    if (auto ok = run_layer(st, pass, layer, r); !ok) return ok;
  }
  if (n_layers == 0) {
    if (auto ok = run_layerless(st, pass, first); !ok) return ok;
  }
  if (fwd && g.first_fwd_s < 0) g.first_fwd_s = g.time.t - op_start;
  if (progress_ && !progress_(g.time.t)) return interrupt();
  return true;
}

// A virtual stage without transformer layers (parallel.layout's E, m or L alone): what it
// computes beyond layers, and its gradients (embedding, MTP) after the last micro-batch.
Result<bool> MemoizedExecutor::run_layerless(int st, const PipelinePass& pass, int first) {
  StageTime& g = stages_[idx(st)].time;
  const bool fwd = pass.kind == PassKind::kForward;
  const bool weight = pass.grad == GradPart::kWeight;  // the output layer's W stays in B
  const double dt =
      weight ? 0.0 : chunk_extra_seconds(s_, lc_[0], shape_, st, pass.chunk, pass.kind);
  if (dt > 0) {
    OpRecord r;
    r.stage = static_cast<std::uint32_t>(st);
    r.kind = fwd ? OpKind::kForward : OpKind::kBackward;
    r.micro = static_cast<std::uint32_t>(pass.micro);
    r.chunk = static_cast<std::uint32_t>(pass.chunk);
    r.layer = static_cast<std::uint32_t>(first);
    r.start_s = g.t;
    g.t += dt;
    g.compute += dt;
    r.end_s = g.t;
    add_op(r);
  }
  if (fwd || pass.grad == GradPart::kInput || pass.micro != chunk_micro_batches(shape_) - 1) {
    return true;
  }
  Stage& sg = stages_[idx(st)];
  sg.buckets.add(extra_gradient_bytes(s_, shape_, st, pass.chunk));
  if (s_.par.zero == 3 || s_.par.overlap_grad_reduce) {
    for (GradClass cls : {GradClass::kDense, GradClass::kExpert}) {
      if (auto ok = reduce_buckets(st, cls, g.t, s_.par.zero == 3); !ok) return ok;
    }
  }
  return true;
}

// FSDP: each layer's parameters are gathered on the data-parallel stream while the layer
// before it computes (the first layer of a pass waits for its own). `next_ready` carries when
// the next layer's parameters are in.
Result<bool> MemoizedExecutor::fsdp_wait(int st, int k, int n_layers, double& next_ready) {
  StageTime& g = stages_[idx(st)].time;
  if (k == 0) {
    auto d = fsdp_gather(st);
    if (!d) return d.error();
    next_ready = *d;
  }
  const double mine = next_ready;
  if (k + 1 < n_layers) {
    auto d = fsdp_gather(st);
    if (!d) return d.error();
    next_ready = *d;
  }
  if (mine > g.t) {
    g.exposed[static_cast<int>(CommGroup::kDp)] += mine - g.t;
    g.t = mine;
  }
  return true;
}

// One layer's parameters gathered on the data-parallel stream; returns when they are in.
Result<double> MemoizedExecutor::fsdp_gather(int st) {
  Stage& g = stages_[idx(st)];
  const double start = std::max(g.dp_free, g.time.t);
  auto d = run_comm(st, g.fsdp_gather, start);
  if (!d) return d.error();
  g.dp_free = start + *d;
  return g.dp_free;
}

// One layer of a pass: the recomputed forward (full recomputation), the layer's compute, its
// collectives, and (last micro-batch's backward) its gradients into the buckets.
Result<bool> MemoizedExecutor::run_layer(int st, const PipelinePass& pass, int layer, OpRecord r) {
  StageTime& g = stages_[idx(st)].time;
  const bool fwd = pass.kind == PassKind::kForward;
  const LayerCosts& lc = lc_[s_.model.moe_layer(static_cast<int>(r.layer)) ? 1 : 0];
  const bool weight = pass.grad == GradPart::kWeight;  // DualPipe's W: compute alone
  if (!fwd && !weight && s_.par.recompute == "full") {
    // The recomputed forward and its collectives come first.
    r.kind = OpKind::kForward;
    r.start_s = g.t;
    g.t += lc.recompute_s;
    g.compute += lc.recompute_s;
    r.end_s = g.t;
    add_op(r);
    if (auto ok = layer_comm(st, PassKind::kForward, r); !ok) return ok;
    r.kind = OpKind::kBackward;
  }
  const double dt = fwd ? layer_pass_seconds(s_, lc, shape_, st, pass.chunk, pass.kind, layer)
                        : backward_part_seconds(s_, lc, shape_, st, pass.chunk, pass.grad, layer);
  r.start_s = g.t;
  g.t += dt;
  g.compute += dt;
  r.end_s = g.t;
  add_op(r);
  if (!weight) {
    // moe.overlap: the partner pass's compute of this layer runs beside its EP collectives.
    const double beside = ep_overlap_.partnered(st, pass) ? partner_seconds(st, pass, layer) : 0.0;
    if (auto ok = layer_comm(st, pass.kind, r, beside); !ok) return ok;
  }
  // The last backward of the chunk on this stage (its weight gradient): its gradients are
  // complete.
  if (!fwd && pass.grad != GradPart::kInput && pass.micro == chunk_micro_batches(shape_) - 1) {
    return add_gradients(st, pass.chunk, layer);
  }
  return true;
}

// What of the partner's compute (the other kind) runs beside layer `layer` of a partnered pass:
// 1f1b the same chunk's layer; DualPipe the pair's other chunk whole, shared by this pass's MoE
// layers (the ones with EP collectives), as the F&B chunks overlap as a whole.
double MemoizedExecutor::partner_seconds(int st, const PipelinePass& pass, int layer) const {
  const PassKind other = pass.kind == PassKind::kForward ? PassKind::kBackward : PassKind::kForward;
  const int L = s_.model.layers;
  const int c = ep_overlap_.partner_chunk(pass);
  auto compute = [&](int chunk, int k) {
    const int at = first_layer(shape_, L, st, chunk) + k;
    return layer_pass_seconds(s_, lc_[s_.model.moe_layer(at) ? 1 : 0], shape_, st, chunk, other, k);
  };
  if (c == pass.chunk) return compute(c, layer);
  const int first = first_layer(shape_, L, st, pass.chunk);
  int moe = 0;
  for (int k = 0; k < layers_in(shape_, L, st, pass.chunk); ++k) {
    moe += s_.model.moe_layer(first + k) ? 1 : 0;
  }
  if (moe == 0 || !s_.model.moe_layer(first + layer)) return 0.0;
  double total = 0;
  for (int k = 0; k < layers_in(shape_, L, st, c); ++k) total += compute(c, k);
  return total / moe;
}

Result<bool> MemoizedExecutor::layer_comm(int st, PassKind kind, const OpRecord& base,
                                          double beside_s) {
  const std::size_t moe = s_.model.moe_layer(static_cast<int>(base.layer)) ? 1 : 0;
  LayerOps& lo = layer_ops_[idx(kind)][moe][idx(st)];
  // The partner's compute is shared by this pass's EP collectives (dispatch and combine).
  const std::ptrdiff_t ep = lo.ep;
  // Without records or anything beside, a collective costed before takes blocking_known's
  // few additions (the same ones blocking() makes, in the same order).
  const bool fast = repeats_free_ && !records_ && beside_s == 0;
  for (StableOp& op : lo.ops) {
    if (fast && (op.known || op.free)) {
      blocking_known(st, op);
      continue;
    }
    const double beside = op.op.group == CommGroup::kEp && ep > 0 ? beside_s / ep : 0.0;
    if (auto ok = blocking(st, op, base, beside); !ok) return ok;
  }
  return true;
}

// A layer's gradients join the pending buckets; with overlap (or FSDP) full buckets go.
Result<bool> MemoizedExecutor::add_gradients(int st, int chunk, int layer) {
  Stage& g = stages_[idx(st)];
  const Parallelism& p = s_.par;
  g.buckets.add(layer_gradient_bytes(s_, shape_, st, chunk, layer));
  if (p.zero == 3 || p.overlap_grad_reduce) {
    for (GradClass cls : {GradClass::kDense, GradClass::kExpert}) {
      if (auto ok = reduce_buckets(st, cls, g.time.t, p.zero == 3); !ok) return ok;
    }
  }
  return true;
}

// Reduces the buckets of `cls` that are due (all pending when `flush`), one after another on
// the data-parallel stream, from `at` on.
Result<bool> MemoizedExecutor::reduce_buckets(int st, GradClass cls, double at, bool flush) {
  Stage& g = stages_[idx(st)];
  while (const std::optional<CommOp> op = g.buckets.next(cls, flush)) {
    const double start = std::max(at, g.dp_free);
    auto d = run_comm(st, *op, start);
    if (!d) return d.error();
    g.dp_free = start + *d;
  }
  return true;
}

// Data parallelism's tail, the optimizer and (ZeRO 1/2) the parameter all-gather.
Result<bool> MemoizedExecutor::finish_stage(int st) {
  Stage& g = stages_[idx(st)];
  for (GradClass cls : {GradClass::kDense, GradClass::kExpert}) {
    if (auto ok = reduce_buckets(st, cls, g.time.t, true); !ok) return ok;
  }
  if (shape_.dualpipe) {
    if (auto ok = mirror_reduce(st); !ok) return ok;
  }
  if (g.dp_free > g.time.t) {
    g.time.exposed[static_cast<int>(CommGroup::kDp)] += g.dp_free - g.time.t;
    g.time.t = g.dp_free;
  }
  const double params = stage_params(s_, shape_, st);
  const double opt = optimizer_seconds(s_, params);
  OpRecord r;
  r.stage = static_cast<std::uint32_t>(st);
  r.kind = OpKind::kOptimizer;
  r.start_s = g.time.t;
  g.time.t += opt;
  r.end_s = g.time.t;
  add_op(r);
  g.time.optimizer = opt;
  if (s_.par.zero == 1 || s_.par.zero == 2) return param_gather(st, params);
  return true;
}

// DualPipe: model stage i has a copy on stage i (chunk 0) and on stage p - 1 - i (chunk 1);
// the two copies' gradients are summed (deepseek-ai/DualPipe's example adds each to its
// mirror's) by an all-reduce of the stage's gradients (the shard its data-parallel reduction
// left, with ZeRO) between the two GPUs, on the data-parallel stream after that reduction.
Result<bool> MemoizedExecutor::mirror_reduce(int st) {
  Stage& g = stages_[idx(st)];
  const CommOp op = mirror_reduce_op(s_, shape_, place_, st);
  const double start = std::max(g.dp_free, g.time.t);
  auto d = run_comm(st, op, start);
  if (!d) return d.error();
  g.dp_free = start + *d;
  return true;
}

// ZeRO 1/2: the updated parameters (bf16), bucket by bucket. Overlapped with the next step's
// first forward pass (the steady state of back-to-back steps), only what outlasts that pass is
// exposed.
Result<bool> MemoizedExecutor::param_gather(int st, double params) {
  Stage& g = stages_[idx(st)];
  double gather = 0;
  for (const CommOp& op : param_gather_ops(s_, place_, st, params)) {
    auto d = run_comm(st, op, g.time.t + gather);
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
