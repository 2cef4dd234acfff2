// The static op program of each pipeline stage (see stage_program.hpp).
#include "stepsim/workload/stage_program.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <utility>

#include "src/workload/dualpipe_mirror.hpp"
#include "src/workload/memoized_comm.hpp"
#include "src/workload/moe/ep_overlap.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/data_parallel_comm.hpp"
#include "stepsim/workload/layer_comm.hpp"

namespace stepsim::workload {
// A named namespace, not an anonymous one: StageProgramStream::Impl holds these types, and a
// member of a named class must not have a type with internal linkage (GCC's
// -Wsubobject-linkage in a unity build).
namespace stage_program_detail {

// What every stage's builder shares: the pipeline's shape and placement, the layers' costs,
// moe.overlap's partners.
struct ProgramContext {
  ProgramContext(const Scenario& s, ProgramUse u)
      : use(u),
        shape(pipeline_shape(s)),
        place{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp},
        lc{layer_costs(s, false), layer_costs(s, true)},
        ep_overlap(s, shape) {}
  ProgramUse use;
  PipelineShape shape;
  Placement place;
  std::array<LayerCosts, 2> lc;  // a dense layer's, an MoE layer's
  EpOverlap ep_overlap;          // moe.overlap
};

// Builds one stage's program, pass by pass.
class ProgramBuilder {
 public:
  ProgramBuilder(const Scenario& s, const ProgramContext& ctx, int stage)
      : s_(s),
        use_(ctx.use),
        shape_(ctx.shape),
        place_(ctx.place),
        lc_(ctx.lc),
        buckets_(s, place_, stage),
        ep_overlap_(ctx.ep_overlap),
        recompute_full_(s.par.recompute == "full") {
    prog_.stage = stage;
    for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
      // Only the kinds of layer the model has (a dense model's, or an MoE model without dense
      // layers: one list, shared).
      const bool has_dense = s.model.experts == 0 || s.model.dense_layers > 0;
      const bool has_moe = s.model.experts > 0;
      auto& ops = layer_ops_[static_cast<int>(k)];
      for (const bool moe : {false, true}) {
        if (moe ? !has_moe : !has_dense) continue;
        LayerOps& lo = ops[moe ? 1 : 0];
        for (const CommOp& op : layer_collectives(s, place_, stage, k, moe)) {
          lo.ops.push_back(add_comm(op));
          const bool ep = op.group == CommGroup::kEp;
          lo.ep_all += ep ? 1 : 0;
          lo.ep_busy += ep && !is_free(op) ? 1 : 0;
        }
      }
      if (!has_moe) ops[1] = ops[0];
      if (!has_dense) ops[0] = ops[1];
    }
    if (s.par.zero == 3) fsdp_gather_ = add_comm(fsdp_gather_op(s, place_, stage));
    prog_.repeated = static_cast<std::uint32_t>(prog_.comm_ops.size());
    for (const CommOp& op : prog_.comm_ops) free_.push_back(is_free(op) ? 1 : 0);
    for (int c = 0; c < shape_.chunks; ++c) {
      layers_.push_back(layers_in(shape_, s.model.layers, stage, c));
      first_.push_back(first_layer(shape_, s.model.layers, stage, c));
    }
    find_consumers();
    passes_ = stage_schedule(shape_, stage);
  }

  // The whole program at once.
  StageProgram build() {
    reserve_ops();
    while (next_group()) {
    }
    tail();
    prog_.bodies.clear();
    return std::move(prog_);
  }

  // Built as it is read (StageProgramStream): a pass built before is a kBody op.
  void stream() { stream_ = true; }

  // Appends the next pass (or pair) with its receives and sends; false when the passes are
  // through.
  bool next_group() {
    const int st = prog_.stage;
    const std::vector<PipelinePass>& passes = passes_;
    const std::size_t i = next_;
    if (i >= passes.size()) return false;
    const PipelinePass& pass = passes[i];
    next_ += 1;
    // moe.overlap 1f1b: a steady-state forward and the backward after it run as one pair.
    if (use_ == ProgramUse::kWholeStep && pass.kind == PassKind::kForward &&
        ep_overlap_.partnered(st, pass) && i + 1 < passes.size() &&
        ep_overlap_.partnered(st, passes[i + 1]) && pair_mergeable(pass, passes[i + 1])) {
      run_pair(pass, passes[i + 1]);
      next_ += 1;
      return true;
    }
    // DualPipe's F&B pair without EP to overlap: both inputs in, then one after the other
    // (the memoized executor's rule).
    if (shape_.dualpipe && pass.kind == PassKind::kForward && pass.partner >= 0 &&
        i + 1 < passes.size()) {
      const PipelinePass& b = passes[i + 1];
      recv_input(pass);
      recv_input(b);
      for (const PipelinePass* q : {&pass, &b}) {
        mark(StageOpKind::kPassStart, *q, q == &pass);
        run_pass(*q);
        end_pass(*q, q == &pass);
      }
      next_ += 1;
      return true;
    }
    recv_input(pass);
    mark(StageOpKind::kPassStart, pass);
    run_pass(pass);
    end_pass(pass);
    return true;
  }

  // Appends the tail (after the last pass).
  void tail() {
    prog_.passes_end = static_cast<std::uint32_t>(prog_.ops.size());
    finish();
  }

  StageProgram& program() { return prog_; }

 private:
  // Room for the ops of `passes` (each layer: its compute, its collectives, a recomputed
  // forward's, FSDP's gathers; each pass: its marks, receive and sends).
  void reserve_ops() {
    std::size_t per_layer = 1;
    for (const auto& kind : layer_ops_) {
      for (const LayerOps& lo : kind) per_layer = std::max(per_layer, 1 + lo.ops.size());
    }
    if (recompute_full_) per_layer *= 2;
    if (s_.par.zero == 3) per_layer += 3;
    std::size_t n = 16;
    for (const PipelinePass& pass : passes_) {
      n += 4 + consumers_.size() + per_layer * static_cast<std::size_t>(layers(pass.chunk));
    }
    prog_.ops.reserve(n);
  }

  // A default op appended, to be filled in: copied from a constant (value-initialising it in
  // place is a `rep stos`, building it on the stack and copying it stalls on store forwarding).
  StageOp& new_op() {
    static constexpr StageOp kBlank{};
    return prog_.ops.emplace_back(kBlank);
  }

  // Layers of this stage's chunk `c`, and the model index of its first.
  [[nodiscard]] int layers(int c) const { return layers_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] int first(int c) const { return first_[static_cast<std::size_t>(c)]; }

  void mark(StageOpKind kind, const PipelinePass& pass, bool paired = false) {
    StageOp& m = new_op();
    m.kind = kind;
    m.pass = pass.kind;
    m.chunk = static_cast<std::uint32_t>(pass.chunk);
    m.micro = static_cast<std::uint32_t>(pass.micro);
    m.grad = pass.grad;
    m.paired = paired;
  }

  void recv_input(const PipelinePass& pass) {
    if (pass.grad == GradPart::kWeight) return;  // DualPipe's W: its B received the input
    const PassInput in = input_of(shape_, prog_.stage, pass.kind, pass.chunk);
    if (in.external || in.stage == prog_.stage) return;
    StageOp& r = new_op();
    r.kind = StageOpKind::kRecv;
    r.peer = in.stage;
    r.pass = in.kind;
    r.chunk = static_cast<std::uint32_t>(in.chunk);
    r.micro = static_cast<std::uint32_t>(pass.micro);
  }

  // The pass's end and the sends of its output.
  void end_pass(const PipelinePass& pass, bool paired = false) {
    mark(StageOpKind::kPassEnd, pass, paired);
    if (pass.grad == GradPart::kWeight) return;  // its B sent the input gradient
    for (int dst : consumers_[{static_cast<int>(pass.kind), pass.chunk}]) {
      StageOp& snd = new_op();
      snd.kind = StageOpKind::kSend;
      snd.peer = dst;
      snd.pass = pass.kind;
      snd.chunk = static_cast<std::uint32_t>(pass.chunk);
      snd.micro = static_cast<std::uint32_t>(pass.micro);
    }
  }

  OpRecord layer_record(const PipelinePass& pass, int layer) const {
    OpRecord r;
    r.stage = static_cast<std::uint32_t>(prog_.stage);
    r.kind = pass.kind == PassKind::kForward ? OpKind::kForward : OpKind::kBackward;
    r.micro = static_cast<std::uint32_t>(pass.micro);
    r.chunk = static_cast<std::uint32_t>(pass.chunk);
    r.layer = static_cast<std::uint32_t>(first(pass.chunk) + layer);
    return r;
  }

  double pass_layer_seconds(const PipelinePass& pass, int layer) const {
    const OpRecord r = layer_record(pass, layer);
    const LayerCosts& lc = lc_[s_.model.moe_layer(static_cast<int>(r.layer)) ? 1 : 0];
    return layer_pass_seconds(s_, lc, shape_, prog_.stage, pass.chunk, pass.kind, layer);
  }

  // Pairs run merged when both have layers (FSDP and full recomputation: validate refuses them
  // with the whole step's overlap).
  bool pair_mergeable(const PipelinePass& f, const PipelinePass& b) const {
    return layers(f.chunk) > 0 && layers(b.chunk) > 0;
  }

  // moe.overlap 1f1b in the whole step (Megatron's combined 1F1B): the forward `f` and the
  // backward `b` start when both inputs are in and go layer by layer together, forward layer k
  // then backward layer nb - 1 - k. Each EP collective of the forward runs beside the
  // backward's compute of its layer (moved into it, shared over the layer's EP collectives),
  // each of the backward's beside the forward's next layer; what a layer has no partner for
  // runs alone. The memoized executor's accounting (ep_overlap.hpp), made causal.
  void run_pair(const PipelinePass& f, const PipelinePass& b) {
    const int st = prog_.stage;
    const int nf = layers(f.chunk);
    const int nb = layers(b.chunk);
    recv_input(f);
    recv_input(b);
    mark(StageOpKind::kPassStart, f, true);
    mark(StageOpKind::kPassStart, b);
    double moved_f = 0;  // of forward layer k's compute, already run beside the backward's EP
    for (int k = 0; k < std::max(nf, nb); ++k) {
      const int l = nb - 1 - k;
      double moved_b = 0;
      if (k < nf) {
        const OpRecord r = layer_record(f, k);
        const double own = pass_layer_seconds(f, k) - moved_f;
        if (own > 0) compute(r, own);
        const double beside = l >= 0 ? pass_layer_seconds(b, l) : 0.0;
        moved_b = layer_comm(PassKind::kForward, r, beside, l >= 0 ? layer_record(b, l) : r);
        if (k == nf - 1) end_pass(f, true);
      }
      moved_f = 0;
      if (k < nb) {
        const OpRecord r = layer_record(b, l);
        const double own = pass_layer_seconds(b, l) - moved_b;
        if (own > 0) compute(r, own);
        const double beside = k + 1 < nf ? pass_layer_seconds(f, k + 1) : 0.0;
        moved_f =
            layer_comm(PassKind::kBackward, r, beside, k + 1 < nf ? layer_record(f, k + 1) : r);
        if (last_gradients(b)) {
          buckets_.add(layer_gradient_bytes(s_, shape_, st, b.chunk, l));
          if (s_.par.overlap_grad_reduce) reduce_buckets(false);
        }
      }
    }
    end_pass(b);
  }

  // The pass that completes its chunk's gradients on this stage: the last micro-batch's
  // backward, or its weight gradient when split (DualPipe's W).
  bool last_gradients(const PipelinePass& pass) const {
    return pass.kind == PassKind::kBackward && pass.grad != GradPart::kInput &&
           pass.micro == chunk_micro_batches(shape_) - 1;
  }

  std::uint32_t add_comm(const CommOp& op) {
    prog_.comm_ops.push_back(op);
    return static_cast<std::uint32_t>(prog_.comm_ops.size() - 1);
  }

  // Which stages read the output of this stage's passes (kind, chunk): a pipeline send each.
  void find_consumers() {
    const int st = prog_.stage;
    for (int other = 0; other < shape_.stages; ++other) {
      for (int c = 0; c < shape_.chunks; ++c) {
        for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
          const PassInput in = input_of(shape_, other, k, c);
          if (in.external || in.stage != st || other == st) continue;
          consumers_[{static_cast<int>(in.kind), in.chunk}].push_back(other);
        }
      }
    }
  }

  // A pass's ops. Those of a pass that releases nothing to the data-parallel stream (no FSDP
  // gathers, not the one that completes the gradients) differ between micro-batches only in
  // their records' micro-batch: built once per (chunk, kind, part, partner hiding its EP
  // collectives), then copied (stage_programs) or named by a kBody op (the stream).
  void run_pass(const PipelinePass& pass) {
    if (s_.par.zero == 3 || last_gradients(pass)) {
      build_pass(pass);
      return;
    }
    const bool hides = use_ == ProgramUse::kMemoized && ep_overlap_.partnered(prog_.stage, pass);
    const std::uint64_t key = body_key(pass, hides);
    const auto micro = static_cast<std::uint32_t>(pass.micro);
    for (std::size_t i = 0; i < body_keys_.size(); ++i) {
      if (body_keys_[i] != key) continue;
      if (stream_) {
        StageOp& op = new_op();
        op.kind = StageOpKind::kBody;
        op.dp = static_cast<std::uint32_t>(i);
        op.micro = micro;
        return;
      }
      const std::vector<StageOp>& body = prog_.bodies[i];
      const std::size_t from = prog_.ops.size();
      prog_.ops.insert(prog_.ops.end(), body.begin(), body.end());
      for (std::size_t k = from; k < prog_.ops.size(); ++k) prog_.ops[k].record.micro = micro;
      return;
    }
    const std::size_t from = prog_.ops.size();
    build_pass(pass);
    body_keys_.push_back(key);
    std::vector<StageOp>& body = prog_.bodies.emplace_back(
        prog_.ops.begin() + static_cast<std::ptrdiff_t>(from), prog_.ops.end());
    for (const StageOp& op : body) {
      STEPSIM_CHECK(op.kind == StageOpKind::kCompute || op.kind == StageOpKind::kCollective,
                    "stage program: a pass body holds only compute and collectives");
    }
  }

  // What a pass's ops depend on but the micro-batch, in one word (compared in registers: a key
  // struct written to the stack and read back whole stalls on store forwarding).
  [[nodiscard]] std::uint64_t body_key(const PipelinePass& pass, bool hides) const {
    const auto u = [](auto v) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)); };
    const int partner = hides ? ep_overlap_.partner_chunk(pass) : -1;
    return u(pass.chunk) | u(pass.kind) << 32 | u(pass.grad) << 36 | u(hides) << 40 |
           (u(partner) & 0xffffu) << 44;
  }

  void build_pass(const PipelinePass& pass) {
    const int st = prog_.stage;
    const bool fwd = pass.kind == PassKind::kForward;
    const int n_layers = layers(pass.chunk);
    const int first = this->first(pass.chunk);
    std::uint32_t fsdp_mine = 0;  // FSDP: the data-parallel op of this layer's parameters
    for (int k = 0; k < n_layers; ++k) {
      const int layer = fwd ? k : n_layers - 1 - k;
      OpRecord r;
      r.stage = static_cast<std::uint32_t>(st);
      r.kind = fwd ? OpKind::kForward : OpKind::kBackward;
      r.micro = static_cast<std::uint32_t>(pass.micro);
      r.chunk = static_cast<std::uint32_t>(pass.chunk);
      r.layer = static_cast<std::uint32_t>(first + layer);
      if (s_.par.zero == 3) {
        // Layer k's parameters were gathered one layer ahead (the first layer's: now).
        if (k == 0) fsdp_mine = release(fsdp_gather_);
        const std::uint32_t mine = fsdp_mine;
        if (k + 1 < n_layers) fsdp_mine = release(fsdp_gather_);
        StageOp& w = new_op();
        w.kind = StageOpKind::kWaitDp;
        w.dp = mine;
      }
      run_layer(pass, layer, r);
    }
    if (n_layers == 0) run_layerless(pass, first);
  }

  // A virtual stage without transformer layers: what it computes beyond layers, and its
  // gradients (embedding, MTP) after the last micro-batch (the memoized executor's rule).
  void run_layerless(const PipelinePass& pass, int first) {
    const bool fwd = pass.kind == PassKind::kForward;
    // DualPipe's W: the output layer's weight gradient stays in B.
    const double dt =
        pass.grad == GradPart::kWeight
            ? 0.0
            : chunk_extra_seconds(s_, lc_[0], shape_, prog_.stage, pass.chunk, pass.kind);
    if (dt > 0) {
      OpRecord r;
      r.stage = static_cast<std::uint32_t>(prog_.stage);
      r.kind = fwd ? OpKind::kForward : OpKind::kBackward;
      r.micro = static_cast<std::uint32_t>(pass.micro);
      r.chunk = static_cast<std::uint32_t>(pass.chunk);
      r.layer = static_cast<std::uint32_t>(first);
      compute(r, dt);
    }
    if (fwd || !last_gradients(pass)) return;
    buckets_.add(extra_gradient_bytes(s_, shape_, prog_.stage, pass.chunk));
    if (s_.par.zero == 3 || s_.par.overlap_grad_reduce) reduce_buckets(s_.par.zero == 3);
  }

  void run_layer(const PipelinePass& pass, int layer, OpRecord r) {
    const bool fwd = pass.kind == PassKind::kForward;
    const LayerCosts& lc = lc_[s_.model.moe_layer(static_cast<int>(r.layer)) ? 1 : 0];
    const bool weight = pass.grad == GradPart::kWeight;  // DualPipe's W: compute alone
    if (!fwd && !weight && recompute_full_) {
      r.kind = OpKind::kForward;
      compute(r, lc.recompute_s);
      layer_comm(PassKind::kForward, r);
      r.kind = OpKind::kBackward;
    }
    compute(r,
            fwd ? layer_pass_seconds(s_, lc, shape_, prog_.stage, pass.chunk, pass.kind, layer)
                : backward_part_seconds(s_, lc, shape_, prog_.stage, pass.chunk, pass.grad, layer));
    if (!weight) {
      // kMemoized, moe.overlap: the partner pass's compute of this layer hides its EP
      // collectives (the whole step pairs the passes instead: run_pair).
      const bool hides = use_ == ProgramUse::kMemoized && ep_overlap_.partnered(prog_.stage, pass);
      layer_comm(pass.kind, r, hides ? partner_seconds(pass, layer) : 0.0);
    }
    if (last_gradients(pass)) {
      buckets_.add(layer_gradient_bytes(s_, shape_, prog_.stage, pass.chunk, layer));
      if (s_.par.zero == 3 || s_.par.overlap_grad_reduce) reduce_buckets(s_.par.zero == 3);
    }
  }

  void compute(const OpRecord& r, double seconds) {
    StageOp& op = new_op();
    op.kind = StageOpKind::kCompute;
    op.record = r;
    op.seconds = seconds;
  }

  // What of the partner's compute (the other kind) hides the EP collectives of layer `layer`
  // of a partnered pass (kMemoized): 1f1b the same chunk's layer; DualPipe the pair's other
  // chunk whole, shared by this pass's MoE layers (the ones with EP collectives), as the F&B
  // chunks overlap as a whole.
  [[nodiscard]] double partner_seconds(const PipelinePass& pass, int layer) const {
    const int st = prog_.stage;
    const PassKind other =
        pass.kind == PassKind::kForward ? PassKind::kBackward : PassKind::kForward;
    const int c = ep_overlap_.partner_chunk(pass);
    auto compute = [&](int chunk, int k) {
      const int at = first(chunk) + k;
      return layer_pass_seconds(s_, lc_[s_.model.moe_layer(at) ? 1 : 0], shape_, st, chunk, other,
                                k);
    };
    if (c == pass.chunk) return compute(c, layer);
    int moe = 0;
    for (int k = 0; k < layers(pass.chunk); ++k)
      moe += s_.model.moe_layer(first(pass.chunk) + k) ? 1 : 0;
    if (moe == 0 || !s_.model.moe_layer(first(pass.chunk) + layer)) return 0.0;
    double total = 0;
    for (int k = 0; k < layers(c); ++k) total += compute(c, k);
    return total / moe;
  }

  // The layer's blocking collectives; `r` is the layer's compute record, which a collective
  // with TP overlap (CommOp::overlap_s) carries for the GEMM that runs beside it.
  // `beside_s` (moe.overlap): the partner's compute beside this layer's EP collectives, shared
  // over them; kWholeStep moves it there (`partner` its record) and returns how much was placed
  // (0 without EP ops). kMemoized shares it over every EP collective of the layer, free ones
  // too (the memoized accounting), and leaves it in the partner's pass.
  double layer_comm(PassKind kind, const OpRecord& r, double beside_s = 0,
                    const OpRecord& partner = {}) {
    const int moe = s_.model.moe_layer(static_cast<int>(r.layer)) ? 1 : 0;
    const LayerOps& lo = layer_ops_[static_cast<int>(kind)][moe];
    const bool memoized = use_ == ProgramUse::kMemoized;
    const std::ptrdiff_t ep = memoized ? lo.ep_all : lo.ep_busy;
    for (std::uint32_t c : lo.ops) {
      if (free_[c] != 0) {
        if (prog_.comm_ops[c].overlap_s > 0) compute(r, prog_.comm_ops[c].overlap_s);
        continue;
      }
      StageOp& op = new_op();
      op.kind = StageOpKind::kCollective;
      op.comm = c;
      op.record = r;
      if (beside_s > 0 && ep > 0 && prog_.comm_ops[c].group == CommGroup::kEp) {
        op.beside_s = beside_s / static_cast<double>(ep);
        if (!memoized) op.record = partner;
      }
    }
    return ep > 0 ? beside_s : 0.0;
  }

  // Appends comm op `c` to the data-parallel stream and lets it start from here.
  std::uint32_t release(std::uint32_t c) {
    prog_.dp.push_back(c);
    StageOp& op = new_op();
    op.kind = StageOpKind::kRelease;
    op.dp = static_cast<std::uint32_t>(prog_.dp.size());
    return op.dp - 1;
  }

  void reduce_buckets(bool flush) {
    for (GradClass cls : {GradClass::kDense, GradClass::kExpert}) {
      while (const std::optional<CommOp> op = buckets_.next(cls, flush)) {
        if (!is_free(*op)) release(add_comm(*op));
      }
    }
  }

  void finish() {
    reduce_buckets(true);
    if (shape_.dualpipe) {
      // The mirrored copies' all-reduce, after the data-parallel reduction; both stages name
      // its GPUs in the same order (one communicator).
      CommOp op = mirror_reduce_op(s_, shape_, place_, prog_.stage);
      if (use_ == ProgramUse::kWholeStep) std::sort(op.gpus.begin(), op.gpus.end());
      if (!is_free(op)) release(add_comm(op));
    }
    const double params = stage_params(s_, shape_, prog_.stage);
    prog_.optimizer_s = optimizer_seconds(s_, params);
    StageOp& opt = new_op();
    opt.kind = StageOpKind::kOptimizer;
    opt.seconds = prog_.optimizer_s;
    opt.record.stage = static_cast<std::uint32_t>(prog_.stage);
    opt.record.kind = OpKind::kOptimizer;
    prog_.param_gather_first = static_cast<std::uint32_t>(prog_.dp.size());
    if (s_.par.zero == 1 || s_.par.zero == 2) {
      for (const CommOp& op : param_gather_ops(s_, place_, prog_.stage, params)) {
        if (!is_free(op)) prog_.dp.push_back(add_comm(op));
      }
      StageOp& pg = new_op();
      pg.kind = StageOpKind::kParamGather;
      pg.dp = static_cast<std::uint32_t>(prog_.dp.size());
    }
  }

  const Scenario& s_;
  ProgramUse use_;
  const PipelineShape& shape_;
  const Placement& place_;
  const std::array<LayerCosts, 2>& lc_;  // a dense layer's, an MoE layer's
  GradientBuckets buckets_;
  const EpOverlap& ep_overlap_;  // moe.overlap
  bool recompute_full_;          // parallel.recompute full
  StageProgram prog_;
  std::vector<PipelinePass> passes_;  // stage_schedule
  std::size_t next_ = 0;              // the next of passes_ to build
  // A layer's collectives of one pass kind (comm_ops indices) and how many are EP's (busy: not
  // free).
  struct LayerOps {
    std::vector<std::uint32_t> ops;
    std::ptrdiff_t ep_all = 0;
    std::ptrdiff_t ep_busy = 0;
  };
  LayerOps layer_ops_[2][2];              // [pass kind][MoE layer]
  std::vector<std::uint64_t> body_keys_;  // of prog_.bodies: body_key
  bool stream_ = false;                   // a pass built before: a kBody op
  std::vector<std::uint8_t> free_;        // of comm_ops[0...repeated): is_free
  std::vector<int> layers_;               // by chunk: layers_in
  std::vector<int> first_;                // by chunk: first_layer
  std::uint32_t fsdp_gather_ = 0;
  std::map<std::pair<int, int>, std::vector<int>> consumers_;  // (kind, chunk) -> stages
};

}  // namespace stage_program_detail

using stage_program_detail::ProgramBuilder;
using stage_program_detail::ProgramContext;

struct StageProgramStream::Impl {
  Impl(const Scenario& s, ProgramUse use) : ctx(s, use) {
    builders.reserve(static_cast<std::size_t>(s.par.pp));
    for (int st = 0; st < s.par.pp; ++st) builders.emplace_back(s, ctx, st).stream();
  }
  ProgramContext ctx;
  std::vector<ProgramBuilder> builders;
};

StageProgramStream::StageProgramStream(const Scenario& s, ProgramUse use)
    : impl_(std::make_unique<Impl>(s, use)) {}
StageProgramStream::~StageProgramStream() = default;

StageProgram& StageProgramStream::program(int stage) {
  return impl_->builders[static_cast<std::size_t>(stage)].program();
}

bool StageProgramStream::next_group(int stage) {
  return impl_->builders[static_cast<std::size_t>(stage)].next_group();
}

void StageProgramStream::tail(int stage) {
  impl_->builders[static_cast<std::size_t>(stage)].tail();
}

std::vector<StageProgram> stage_programs(const Scenario& s, ProgramUse use) {
  const ProgramContext ctx(s, use);
  std::vector<StageProgram> out;
  out.reserve(static_cast<std::size_t>(s.par.pp));
  for (int st = 0; st < s.par.pp; ++st) out.push_back(ProgramBuilder(s, ctx, st).build());
  return out;
}

std::int64_t stage_send_bytes(const Scenario& s) {
  return pipeline_send_bytes(s);
}

RankCoords coords_of(const Placement& place, std::uint32_t g) {
  const auto gi = static_cast<int>(g);
  RankCoords r;
  r.t = gi % place.tp;
  r.c = (gi / place.tp) % place.cp;
  r.d = (gi / (place.tp * place.cp)) % place.dp;
  r.p = gi / (place.tp * place.cp * place.dp);
  return r;
}

std::vector<std::uint32_t> translate_group(const Placement& place,
                                           const std::vector<std::uint32_t>& ref, int t, int c,
                                           int d) {
  std::vector<RankCoords> m;
  m.reserve(ref.size());
  for (std::uint32_t g : ref) m.push_back(coords_of(place, g));
  // In one dimension: the member's coordinate in the copy that holds coordinate `x`.
  auto dim = [&](int RankCoords::*f, int x) {
    int lo = m[0].*f;
    int hi = lo;
    int step = 0;
    for (const RankCoords& r : m) {
      lo = std::min(lo, r.*f);
      hi = std::max(hi, r.*f);
    }
    if (lo == hi) return std::vector<int>(m.size(), x);
    for (const RankCoords& r : m) {
      const int dx = r.*f - lo;
      if (dx > 0) step = step == 0 ? dx : std::min(step, dx);
    }
    const int count = (hi - lo) / step + 1;
    const int base = step == 1 ? (x / count) * count : x % step;
    std::vector<int> out;
    out.reserve(m.size());
    for (const RankCoords& r : m) out.push_back(base + (r.*f - lo));
    return out;
  };
  const std::vector<int> ts = dim(&RankCoords::t, t);
  const std::vector<int> cs = dim(&RankCoords::c, c);
  const std::vector<int> ds = dim(&RankCoords::d, d);
  std::vector<std::uint32_t> out;
  out.reserve(ref.size());
  for (std::size_t i = 0; i < m.size(); ++i) out.push_back(place.rank(ts[i], cs[i], ds[i], m[i].p));
  return out;
}

}  // namespace stepsim::workload
