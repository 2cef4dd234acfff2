// One training step (see step.hpp). Modelling choices, each stated once:
// - Compute is a roofline per layer and pass: GEMM and attention FLOPs at the GPU's peak x
//   compute.gemm_efficiency, plus elementwise HBM traffic at HBM x compute.memory_efficiency,
//   plus a launch overhead. Backward is twice the forward; full recomputation adds a forward
//   (and its TP collectives) to every backward, selective recomputation the attention core.
// - Attention FLOPs are counted over the whole sequence, as the Megatron-LM and PaLM formulas
//   count them, so that gemm_efficiency is an efficiency against those formulas.
// - TP, CP and EP collectives block the compute stream (no compute/communication overlap inside
//   a layer). Pipeline sends are asynchronous: the receiver waits for the data, the sender does
//   not wait for the receiver.
// - Data parallelism: gradients fill buckets as the last micro-batch's backward passes each
//   layer (compute.overlap_grad_reduce) and the buckets are reduced one after another on a
//   second stream; the optimizer starts when they are done. ZeRO 1/2 all-gathers the updated
//   parameters after the optimizer, hidden behind the next step's first forward pass
//   (parallel.overlap_param_gather) up to that pass's length. FSDP
//   (ZeRO 3) gathers each layer's parameters on that stream one layer ahead of the compute.
// - Expert (MoE) gradients are reduced over the expert-data-parallel group (dp / ep ranks).
#include "stepsim/workload/step.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/core/percentile.hpp"
#include "stepsim/kernels/alpha_beta.hpp"

namespace stepsim::workload {

using collective::Kind;

const char* comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::kTp:
      return "tp";
    case CommGroup::kCp:
      return "cp";
    case CommGroup::kEp:
      return "ep";
    case CommGroup::kPp:
      return "pp";
    case CommGroup::kDp:
      return "dp";
  }
  return "?";
}

namespace {

// NIC RDMA goodput of the first server's first cabled NIC.
DataRate nic_goodput(const topology::Topology& topo, const fabric::FabricParams& fp) {
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v)) continue;
    for (const topology::Port& p : topo.ports_of(v)) {
      if (p.link != topology::kNone) return fabric::rdma_goodput(topo.link_rate(p.link), fp.mtu);
    }
  }
  return DataRate::gbps(400);
}

// A distinct collective of a step: what the comm models memoize and the step counts.
using CollectiveKey = std::tuple<int, std::int64_t, std::vector<std::uint32_t>>;
CollectiveKey key_of(const CommOp& op) {
  return std::make_tuple(static_cast<int>(op.kind), op.bytes, op.gpus);
}
// Nothing to move, or nobody to move it to: free.
bool is_free(const CommOp& op) {
  return op.bytes <= 0 || op.gpus.size() < 2;
}

// What the comm models share: free collectives, the communicator, and memoization by
// (kind, size, GPUs): a step repeats few distinct collectives.
class MemoizedComm : public CommModel {
 public:
  MemoizedComm(const topology::Topology& topo, const Scenario& s) : topo_(topo), s_(s) {}
  Result<CommCost> cost(const CommOp& op) override {
    if (is_free(op)) return CommCost{};
    CollectiveKey key = key_of(op);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    auto comm = collective::make_communicator(topo_, op.gpus);
    if (!comm) return comm.error();
    auto c = compute(op, *comm);
    if (!c) return c.error();
    memo_.emplace(std::move(key), *c);
    return c;
  }

 protected:
  virtual Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) = 0;
  static CommCost with_busbw(const CommOp& op, double seconds) {
    CommCost c;
    c.seconds = seconds;
    c.busbw_gbs = static_cast<double>(op.bytes) / seconds / 1e9 *
                  collective::busbw_factor(op.kind, static_cast<int>(op.gpus.size()));
    return c;
  }
  const topology::Topology& topo_;
  const Scenario& s_;
  std::map<CollectiveKey, CommCost> memo_;
};

class IdealComm final : public MemoizedComm {
 public:
  IdealComm(const topology::Topology& topo, const Scenario& s)
      : MemoizedComm(topo, s), nic_(nic_goodput(topo, s.fabric)) {}
  [[nodiscard]] std::string name() const override { return "ideal"; }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    collective::CollectiveParams p = s_.coll;
    // Algorithms that need NVLS or SHARP hardware: the tuner's choice instead.
    const collective::CollectiveAlgorithm* a = collective::find_algorithm(p.algorithm, op.kind);
    if (a != nullptr && a->support().needs_hardware()) p.algorithm = "auto";
    const collective::Choice ch = collective::choose(
        op.kind, op.bytes, static_cast<int>(op.gpus.size()), comm.gpus_per_server, p, nic_);
    return with_busbw(op, ch.predicted_s);
  }
  DataRate nic_;
};

// Costs every collective of the step at once (prepare); one run_step did not list is costed
// alone through the same kernel.
class AnalyticalComm final : public MemoizedComm {
 public:
  AnalyticalComm(const topology::Topology& topo, const Scenario& s)
      : MemoizedComm(topo, s), routing_(topo) {}
  [[nodiscard]] std::string name() const override { return "analytical"; }
  [[nodiscard]] bool wants_all_ops() const override { return true; }

  Result<bool> prepare(const std::vector<CommOp>& ops) override {
    std::vector<kernels::AlphaBeta> in;
    std::vector<const CommOp*> todo;
    for (const CommOp& op : ops) {
      if (is_free(op) || memo_.contains(key_of(op))) continue;
      auto comm = collective::make_communicator(topo_, op.gpus);
      if (!comm) return comm.error();
      in.push_back(bound_of(op, *comm));
      todo.push_back(&op);
    }
    std::vector<double> out(in.size());
    kernels::alpha_beta(in, out);
    for (std::size_t i = 0; i < todo.size(); ++i) {
      memo_.emplace(key_of(*todo[i]), with_busbw(*todo[i], out[i]));
    }
    return true;
  }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    const kernels::AlphaBeta in = bound_of(op, comm);
    double out = 0;
    kernels::alpha_beta({&in, 1}, {&out, 1});
    return with_busbw(op, out);
  }
  kernels::AlphaBeta bound_of(const CommOp& op, const collective::Communicator& comm) const {
    return collective::analytical_bound(topo_, routing_, comm, op.kind, op.bytes, s_.coll,
                                        s_.fabric);
  }
  fabric::Routing routing_;
};

// Lists the distinct collectives of a step (run_step's first pass for bulk models).
class ListingComm final : public CommModel {
 public:
  Result<CommCost> cost(const CommOp& op) override {
    if (!is_free(op) && seen_.insert(key_of(op)).second) ops.push_back(op);
    return CommCost{};
  }
  [[nodiscard]] std::string name() const override { return "listing"; }
  std::vector<CommOp> ops;

 private:
  std::set<CollectiveKey> seen_;
};

class PacketComm final : public MemoizedComm {
 public:
  PacketComm(const topology::Topology& topo, const Scenario& s, pdes::Sync& sync,
             pdes::EngineOptions engine)
      : MemoizedComm(topo, s), sync_(sync), engine_(std::move(engine)), fabric_(s.fabric) {
    if (s.fidelity == "cell") fabric_.cell = s.cell;
  }
  [[nodiscard]] std::string name() const override {
    return fabric_.cell.count() > 0 ? "cell" : "packet";
  }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    // Algorithms with restrictions apply where they can; the ring elsewhere.
    const collective::CollectiveParams p = collective::applicable_params(
        s_.coll, collective::CollectiveShape::of(op.kind, op.bytes, static_cast<int>(comm.size()),
                                                 comm.gpus_per_server));
    collective::CollectiveSpec spec;
    spec.kind = op.kind;
    spec.bytes = op.bytes;
    // The same collective on the other TP (and CP) ranks runs at the same time on their NICs.
    const int copies = op.group == CommGroup::kTp   ? 1
                       : op.group == CommGroup::kCp ? s_.par.tp
                                                    : s_.par.tp * s_.par.cp;
    if (s_.concurrent && copies > 1 && collective::runs_concurrently(p, op.kind)) {
      std::vector<collective::Communicator> comms{comm};
      for (int k = 1; k < copies; ++k) {
        std::vector<std::uint32_t> gpus = op.gpus;
        for (std::uint32_t& g : gpus) g += static_cast<std::uint32_t>(k);
        auto c = collective::make_communicator(topo_, gpus);
        if (!c) return c.error();
        comms.push_back(std::move(c).value());
      }
      const std::vector<collective::CollectiveSpec> specs(comms.size(), spec);
      auto r = collective::run_collectives(topo_, comms, specs, p, s_.nic, fabric_, sync_, engine_);
      if (!r) return r.error();
      collective::MultiRun run = std::move(r).value();
      return cost_of(op, run.results, run.rdma, std::move(run.connections));
    }
    auto r = collective::run_collective(topo_, comm, spec, p, s_.nic, fabric_, sync_, engine_);
    if (!r) return r.error();
    collective::CollectiveRun run = std::move(r).value();
    return cost_of(op, {&run.result, 1}, run.rdma, std::move(run.connections));
  }

  // The collective's cost from its packet run (with its copies): the slowest copy's time, and
  // what the NICs and the fabric saw.
  static Result<CommCost> cost_of(const CommOp& op,
                                  std::span<const collective::CollectiveResult> results,
                                  nic::RdmaRun& rdma, std::vector<nic::Connection>&& conns) {
    if (!rdma.stats.completed && pdes::Engine::stop_requested()) return Error{"interrupted"};
    std::int64_t t = 0;
    LogHistogram fct;
    for (const collective::CollectiveResult& x : results) {
      if (!rdma.stats.completed || !x.complete()) {
        return Error{"a " + collective::kind_name(op.kind) + " of " + std::to_string(op.bytes) +
                     " bytes over " + std::to_string(op.gpus.size()) +
                     " GPUs did not complete (stopped or packets lost beyond recovery)"};
      }
      t = std::max(t, x.time_ps);
      fct.merge(x.message_fct);
    }
    CommCost c = with_busbw(op, static_cast<double>(t) * 1e-12);
    const fabric::FabricSummary& fs = rdma.summary;
    c.drops = fs.drops();
    c.retransmissions = nic::summarize(rdma.rdma).qp.retransmitted;
    c.paused_ps = fs.paused_ps;
    c.events = rdma.stats.events;
    c.engine = nic::EngineTally::of(rdma);
    c.digest = hash_combine(rdma.stats.digest, static_cast<std::uint64_t>(t));
    std::vector<std::pair<std::uint32_t, fabric::PortStats>> used;
    for (std::uint32_t p = 0; p < rdma.fabric.ports.size(); ++p) {
      const fabric::PortStats& ps = rdma.fabric.ports[p];
      if (ps.used()) used.emplace_back(p, ps);
    }
    c.ports = std::make_shared<const std::vector<std::pair<std::uint32_t, fabric::PortStats>>>(
        std::move(used));
    c.rdma = std::make_shared<const nic::RdmaResults>(std::move(rdma.rdma));
    c.connections = std::make_shared<const std::vector<nic::Connection>>(std::move(conns));
    c.message_fct = std::make_shared<const LogHistogram>(fct);
    return c;
  }

  pdes::Sync& sync_;
  pdes::EngineOptions engine_;
  fabric::FabricParams fabric_;  // the scenario's, with the cell at cell fidelity
};

// The costs of one layer on one GPU, per micro-batch.
struct LayerCosts {
  double fwd_s = 0;         // forward compute
  double bwd_s = 0;         // backward compute
  double recompute_s = 0;   // added to the backward by recomputation
  double logits_fwd_s = 0;  // the output layer (last chunk of the last stage)
  double logits_bwd_s = 0;
};

LayerCosts layer_costs(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const ComputeParams& c = s.compute;
  const double T = static_cast<double>(p.micro_batch) * m.seq_len / p.cp;  // tokens per GPU
  const double h = m.hidden;
  const double tp = p.tp;
  const bool fp8 = m.precision == "fp8";
  const double eff16 = c.gemm_efficiency > 0 ? c.gemm_efficiency : s.gpu.gemm_efficiency;
  const double eff8 = c.gemm_efficiency > 0 ? c.gemm_efficiency : s.gpu.fp8_gemm_efficiency;
  const double peak16 = s.gpu.bf16_flops * eff16;  // attention runs in BF16
  const double peak_gemm = fp8 ? s.gpu.fp8_flops * eff8 : peak16;
  const double hbm = s.gpu.hbm_bandwidth * c.memory_efficiency;
  double ffn = static_cast<double>(m.ffn_params());
  if (m.experts > 0) ffn = ffn * m.top_k * m.capacity_factor + h * m.experts;
  const double gemm = 2 * T * (static_cast<double>(m.attention_params()) + ffn) / tp;
  const double attn = 4 * T * m.seq_len * h / tp;
  const double elem = c.elementwise_bytes * T * h / (p.sequence_parallel ? tp : 1) / hbm;
  const double ovh = c.kernel_overhead.seconds();
  LayerCosts k;
  k.fwd_s = gemm / peak_gemm + attn / peak16 + elem + ovh;
  k.bwd_s = 2 * (gemm / peak_gemm + attn / peak16 + elem) + ovh;
  if (p.recompute == "full") k.recompute_s = k.fwd_s;
  if (p.recompute == "selective") k.recompute_s = attn / peak16;
  const double logits = 2 * T * h * m.vocab / tp / peak_gemm;
  k.logits_fwd_s = logits + ovh;
  k.logits_bwd_s = 2 * logits + ovh;
  return k;
}

struct Step {
  const Scenario& s;
  const topology::Topology& topo;
  CommModel& comm;
  const std::function<bool(double)>& progress;
  Placement place;
  int P = 1, V = 1, M = 1;
  LayerCosts lc;
  StepResult out;
  std::vector<std::uint64_t> digests;
  struct Distinct {
    std::uint32_t first = 0;  // CollectiveRecord id
    std::uint32_t repeats = 0;
    CommCost cost;
  };
  std::map<CollectiveKey, Distinct> seen;

  // Per stage.
  struct Stage {
    std::vector<std::tuple<bool, int, int>> ops;  // forward?, chunk, micro-batch
    std::size_t next = 0;
    double t = 0;        // compute stream
    double dp_free = 0;  // data-parallel stream
    double compute = 0, bubble = 0, optimizer = 0, exposed[kCommGroups] = {0, 0, 0, 0, 0};
    double pending[2] = {0, 0};  // gradient bytes not yet in a bucket: dense, expert
    double first_fwd_s = -1;     // the first forward pass (what hides the parameter gather)
    bool done = false;
  };
  std::vector<Stage> stages;
  // Completion (arrival at the consumer excluded) of F and B by stage, chunk, micro-batch.
  std::vector<double> fin_f, fin_b;
  double& ff(int st, int c, int mb) { return fin_f[(st * V + c) * M + mb]; }
  double& fb(int st, int c, int mb) { return fin_b[(st * V + c) * M + mb]; }

  // Layers of virtual stage (st, c). When P x V does not divide the layers, the first and last
  // virtual stages (which also hold the embedding and the output layer) get one fewer each, as
  // Llama 3 405B's 126 layers ran on 16 stages.
  [[nodiscard]] int layers_in(int st, int c) const {
    const int pv = P * V;
    const int q = (s.model.layers + pv - 1) / pv;
    const int d = pv * q - s.model.layers;
    const int vi = c * P + st;
    return q - ((vi < (d + 1) / 2 || vi >= pv - d / 2) ? 1 : 0);
  }
  [[nodiscard]] int first_layer(int st, int c) const {
    int n = 0;
    for (int vi = 0; vi < c * P + st; ++vi) n += layers_in(vi % P, vi / P);
    return n;
  }

  std::uint32_t gpu(int t, int c, int d, int p) const { return place.rank(t, c, d, p); }
  std::vector<std::uint32_t> tp_group(int st) const {
    std::vector<std::uint32_t> g;
    for (int t = 0; t < place.tp; ++t) g.push_back(gpu(t, 0, 0, st));
    return g;
  }
  std::vector<std::uint32_t> cp_group(int st) const {
    std::vector<std::uint32_t> g;
    for (int c = 0; c < place.cp; ++c) g.push_back(gpu(0, c, 0, st));
    return g;
  }
  std::vector<std::uint32_t> dp_group(int st, int stride, int count) const {
    std::vector<std::uint32_t> g;
    for (int d = 0; d < count; ++d) g.push_back(gpu(0, 0, d * stride, st));
    return g;
  }

  Result<double> run_comm(int st, CommGroup grp, Kind kind, std::int64_t bytes,
                          std::vector<std::uint32_t> gpus, double start) {
    if (bytes <= 0 || gpus.size() < 2) return 0.0;
    CommOp op{kind, bytes, std::move(gpus), grp};
    auto c = comm.cost(op);
    if (!c) return c.error();
    const auto gi = static_cast<int>(grp);
    CollectiveRecord rec;
    rec.id = static_cast<std::uint32_t>(out.colls.size());
    rec.stage = static_cast<std::uint32_t>(st);
    rec.group = grp;
    rec.kind = kind;
    rec.bytes = bytes;
    rec.gpus = static_cast<std::uint32_t>(op.gpus.size());
    rec.start_s = start;
    rec.end_s = start + c->seconds;
    rec.busbw_gbs = c->busbw_gbs;
    out.colls.push_back(rec);
    ++out.collectives[gi];
    out.busbw_gbs[gi] += c->busbw_gbs;
    out.comm_bytes[gi] += static_cast<double>(bytes);
    auto [it, first] = seen.emplace(key_of(op), Distinct{rec.id, 0, *c});
    ++it->second.repeats;
    if (first) {
      ++out.distinct_collectives;
      out.drops += c->drops;
      out.retransmissions += c->retransmissions;
      out.paused_s += static_cast<double>(c->paused_ps) * 1e-12;
      out.events += c->events;
      out.engine.add(c->engine);
      digests.push_back(c->digest);
    }
    return c->seconds;
  }

  // A collective on the compute stream: it waits for it.
  Result<bool> blocking(Stage& g, int st, CommGroup grp, Kind kind, std::int64_t bytes,
                        std::vector<std::uint32_t> gpus, const OpRecord& base) {
    auto d = run_comm(st, grp, kind, bytes, std::move(gpus), g.t);
    if (!d) return d.error();
    if (*d <= 0) return true;
    OpRecord r = base;
    r.kind = 3;
    r.group = static_cast<std::uint8_t>(grp);
    r.start_s = g.t;
    r.end_s = g.t + *d;
    out.ops.push_back(r);
    g.t += *d;
    g.exposed[static_cast<int>(grp)] += *d;
    return true;
  }

  // The layer's TP / CP / EP collectives of one pass.
  Result<bool> layer_comm(Stage& g, int st, bool fwd, const OpRecord& base) {
    const ModelSpec& m = s.model;
    const Parallelism& p = s.par;
    const std::int64_t T = p.micro_batch * m.seq_len / p.cp;
    const std::int64_t act = T * m.hidden * 2;  // bf16 activations of the micro-batch
    if (p.tp > 1) {
      for (int i = 0; i < 2; ++i) {
        if (p.sequence_parallel) {
          auto a = blocking(g, st, CommGroup::kTp, fwd ? Kind::kAllGather : Kind::kReduceScatter,
                            act, tp_group(st), base);
          if (!a) return a;
          auto b = blocking(g, st, CommGroup::kTp, fwd ? Kind::kReduceScatter : Kind::kAllGather,
                            act, tp_group(st), base);
          if (!b) return b;
        } else {
          auto a = blocking(g, st, CommGroup::kTp, Kind::kAllReduce, act, tp_group(st), base);
          if (!a) return a;
        }
      }
    }
    if (p.cp > 1) {
      const std::int64_t kv = std::int64_t{p.cp} * T * 2 * m.kv() * m.head_dim() * 2 / p.tp;
      auto a = blocking(g, st, CommGroup::kCp, fwd ? Kind::kAllGather : Kind::kReduceScatter, kv,
                        cp_group(st), base);
      if (!a) return a;
    }
    if (m.experts > 0 && p.ep > 1) {
      const auto bytes =
          static_cast<std::int64_t>(static_cast<double>(act) * m.top_k * m.capacity_factor / p.tp);
      for (int i = 0; i < 2; ++i) {
        auto a =
            blocking(g, st, CommGroup::kEp, Kind::kAllToAll, bytes, dp_group(st, 1, p.ep), base);
        if (!a) return a;
      }
    }
    return true;
  }

  // Parameters of one layer on one GPU: dense (attention, and the FFN of a dense model) and
  // expert parts.
  [[nodiscard]] std::pair<double, double> layer_params() const {
    const ModelSpec& m = s.model;
    const Parallelism& p = s.par;
    const double attn = static_cast<double>(m.attention_params()) / p.tp;
    if (m.experts == 0) return {attn + static_cast<double>(m.ffn_params()) / p.tp, 0.0};
    return {attn + static_cast<double>(m.hidden) * m.experts,
            static_cast<double>(m.experts) / p.ep * static_cast<double>(m.ffn_params()) / p.tp};
  }
  [[nodiscard]] double embedding_params(int st, int c) const {
    double e = 0;
    const double emb = static_cast<double>(s.model.vocab) * s.model.hidden / s.par.tp;
    if (st == 0 && c == 0) e += emb;
    if (st == P - 1 && c == V - 1 && !s.model.tied_embeddings) e += emb;
    return e;
  }

  // Launches gradient buckets of `cls` (0 dense, 1 expert) holding at least `bucket` bytes, or
  // everything pending when `flush`.
  Result<bool> reduce_buckets(Stage& g, int st, int cls, double at, bool flush) {
    const Parallelism& p = s.par;
    const auto bucket = static_cast<double>(p.bucket);
    while (g.pending[cls] >= bucket || (flush && g.pending[cls] > 0)) {
      const double b = std::min(g.pending[cls], bucket);
      g.pending[cls] -= b;
      const int dp = p.data_parallel();
      const auto group = cls == 0 ? dp_group(st, 1, dp) : dp_group(st, p.ep, dp / p.ep);
      const Kind kind = p.zero == 0 ? Kind::kAllReduce : Kind::kReduceScatter;
      // nccl-tests' S for a reduce-scatter is the whole array: the bucket.
      const double start = std::max(at, g.dp_free);
      auto d = run_comm(st, CommGroup::kDp, kind, static_cast<std::int64_t>(b), group, start);
      if (!d) return d.error();
      g.dp_free = start + *d;
    }
    return true;
  }

  Result<bool> run_op(int st, bool fwd, int c, int mb, double ready) {
    Stage& g = stages[static_cast<std::size_t>(st)];
    if (ready > g.t) {
      OpRecord w;
      w.stage = static_cast<std::uint32_t>(st);
      w.kind = 4;
      w.micro = static_cast<std::uint32_t>(mb);
      w.chunk = static_cast<std::uint32_t>(c);
      w.start_s = g.t;
      w.end_s = ready;
      out.ops.push_back(w);
      g.bubble += ready - g.t;
      g.t = ready;
    }
    const Parallelism& p = s.par;
    const bool last_virtual = st == P - 1 && c == V - 1;
    // Is this the last backward of chunk c on this stage (gradients complete)?
    const bool last_bwd = !fwd && mb == M - 1;
    const auto [dense, expert] = layer_params();
    const int n_layers = layers_in(st, c);
    double fsdp_ready = 0;  // FSDP: when the next layer's parameters are in
    const double op_start = g.t;
    for (int k = 0; k < n_layers; ++k) {
      const int layer = fwd ? k : n_layers - 1 - k;
      OpRecord r;
      r.stage = static_cast<std::uint32_t>(st);
      r.kind = fwd ? 0 : 1;
      r.micro = static_cast<std::uint32_t>(mb);
      r.chunk = static_cast<std::uint32_t>(c);
      r.layer = static_cast<std::uint32_t>(first_layer(st, c) + layer);
      if (p.zero == 3) {
        // FSDP: each layer's parameters are gathered on the data-parallel stream while the
        // layer before it computes (the first layer of a pass waits for its own).
        auto gather = [&]() -> Result<double> {
          const double start = std::max(g.dp_free, g.t);
          auto d = run_comm(st, CommGroup::kDp, Kind::kAllGather,
                            static_cast<std::int64_t>((dense + expert) * 2),
                            dp_group(st, 1, p.data_parallel()), start);
          if (!d) return d.error();
          g.dp_free = start + *d;
          return g.dp_free;
        };
        if (k == 0) {
          auto d = gather();
          if (!d) return d.error();
          fsdp_ready = *d;
        }
        const double mine = fsdp_ready;
        if (k + 1 < n_layers) {
          auto d = gather();
          if (!d) return d.error();
          fsdp_ready = *d;
        }
        if (mine > g.t) {
          g.exposed[static_cast<int>(CommGroup::kDp)] += mine - g.t;
          g.t = mine;
        }
      }
      if (!fwd && s.par.recompute == "full") {
        // The recomputed forward and its collectives come first.
        r.kind = 0;
        r.start_s = g.t;
        g.t += lc.recompute_s;
        g.compute += lc.recompute_s;
        r.end_s = g.t;
        out.ops.push_back(r);
        if (auto ok = layer_comm(g, st, true, r); !ok) return ok;
        r.kind = 1;
      }
      double dt = fwd ? lc.fwd_s : lc.bwd_s;
      if (!fwd && s.par.recompute == "selective") dt += lc.recompute_s;
      if (last_virtual && fwd && layer == n_layers - 1) dt += lc.logits_fwd_s;
      if (last_virtual && !fwd && layer == n_layers - 1) dt += lc.logits_bwd_s;
      r.start_s = g.t;
      g.t += dt;
      g.compute += dt;
      r.end_s = g.t;
      out.ops.push_back(r);
      if (auto ok = layer_comm(g, st, fwd, r); !ok) return ok;
      if (last_bwd) {
        g.pending[0] += (dense + (layer == 0 ? embedding_params(st, c) : 0)) * p.grad_bytes;
        g.pending[1] += expert * p.grad_bytes;
        if (p.zero == 3 || p.overlap_grad_reduce) {
          for (int cls = 0; cls < 2; ++cls) {
            if (auto ok = reduce_buckets(g, st, cls, g.t, p.zero == 3); !ok) return ok;
          }
        }
      }
    }
    if (fwd && g.first_fwd_s < 0) g.first_fwd_s = g.t - op_start;
    if (progress && !progress(g.t)) return Error{"interrupted"};
    return true;
  }

  // Megatron-LM's schedule for one stage: 1F1B, or interleaved 1F1B with V chunks.
  void build_schedule(int st) {
    Stage& g = stages[static_cast<std::size_t>(st)];
    const int total = M * V;
    auto chunk_of = [&](int k, bool fwd) {
      const int c = (k % (P * V)) / P;
      return fwd ? c : V - 1 - c;
    };
    auto micro_of = [&](int k) { return V == 1 ? k : (k / (P * V)) * P + k % P; };
    const int warmup =
        V == 1 ? std::min(P - st - 1, M) : std::min((P - st - 1) * 2 + (V - 1) * P, total);
    int f = 0;
    int b = 0;
    for (; f < warmup; ++f) g.ops.emplace_back(true, chunk_of(f, true), micro_of(f));
    while (f < total) {
      g.ops.emplace_back(true, chunk_of(f, true), micro_of(f));
      ++f;
      g.ops.emplace_back(false, chunk_of(b, false), micro_of(b));
      ++b;
    }
    for (; b < total; ++b) g.ops.emplace_back(false, chunk_of(b, false), micro_of(b));
  }

  // When the input of an op is at this stage (-1: not yet known): the producing op's end plus
  // the pipeline send, when it ran on another stage.
  Result<double> input_ready(int st, bool fwd, int c, int mb, std::int64_t act_bytes) {
    int from_st = -1;
    int from_c = c;
    if (fwd) {
      if (st > 0) {
        from_st = st - 1;
      } else if (c > 0) {
        from_st = P - 1;
        from_c = c - 1;
      } else {
        return 0.0;
      }
    } else if (st < P - 1) {
      from_st = st + 1;
    } else if (c < V - 1) {
      from_st = 0;
      from_c = c + 1;
    } else {
      return ff(st, c, mb);  // the last virtual stage turns around
    }
    const double done = fwd ? ff(from_st, from_c, mb) : fb(from_st, from_c, mb);
    if (done < 0) return -1.0;
    if (from_st == st) return done;
    auto d = run_comm(from_st, CommGroup::kPp, Kind::kSendRecv, act_bytes,
                      {gpu(0, 0, 0, from_st), gpu(0, 0, 0, st)}, done);
    if (!d) return d.error();
    return done + *d;
  }

  Result<bool> run() {
    const Parallelism& p = s.par;
    P = p.pp;
    V = p.vpp;
    M = static_cast<int>(p.micro_batches());
    place = Placement{p.tp, p.cp, p.data_parallel(), p.pp};
    lc = layer_costs(s);
    stages.resize(static_cast<std::size_t>(P));
    fin_f.assign(static_cast<std::size_t>(P * V * M), -1.0);
    fin_b.assign(static_cast<std::size_t>(P * V * M), -1.0);
    for (int st = 0; st < P; ++st) build_schedule(st);
    const std::int64_t act = p.micro_batch * s.model.seq_len / p.cp * s.model.hidden * 2 / p.tp;
    const double end = s.end.seconds();
    bool all = false;
    while (!all) {
      all = true;
      bool moved = false;
      for (int st = 0; st < P; ++st) {
        Stage& g = stages[static_cast<std::size_t>(st)];
        while (g.next < g.ops.size()) {
          const auto [fwd, c, mb] = g.ops[g.next];
          auto ready = input_ready(st, fwd, c, mb, act);
          if (!ready) return ready.error();
          if (*ready < 0) break;
          if (auto ok = run_op(st, fwd, c, mb, *ready); !ok) return ok;
          (fwd ? ff(st, c, mb) : fb(st, c, mb)) = g.t;
          ++g.next;
          moved = true;
          if (g.t > end) {
            out.complete = false;
            return true;
          }
        }
        if (g.next < g.ops.size()) all = false;
      }
      STEPSIM_CHECK(all || moved, "pipeline schedule made no progress");
    }
    // Data parallelism's tail, the optimizer and (ZeRO 1/2) the parameter all-gather.
    for (int st = 0; st < P; ++st) {
      Stage& g = stages[static_cast<std::size_t>(st)];
      for (int cls = 0; cls < 2; ++cls) {
        if (auto ok = reduce_buckets(g, st, cls, g.t, true); !ok) return ok;
      }
      if (g.dp_free > g.t) {
        g.exposed[static_cast<int>(CommGroup::kDp)] += g.dp_free - g.t;
        g.t = g.dp_free;
      }
      double params = 0;
      const auto [dense, expert] = layer_params();
      for (int c = 0; c < V; ++c) {
        params += layers_in(st, c) * (dense + expert) + embedding_params(st, c);
      }
      const double shard = p.zero >= 1 ? params / p.data_parallel() : params;
      const double opt =
          shard * s.compute.optimizer_bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency) +
          s.compute.kernel_overhead.seconds();
      OpRecord r;
      r.stage = static_cast<std::uint32_t>(st);
      r.kind = 2;
      r.start_s = g.t;
      g.t += opt;
      r.end_s = g.t;
      out.ops.push_back(r);
      g.optimizer = opt;
      if (p.zero == 1 || p.zero == 2) {
        // The updated parameters (bf16), bucket by bucket. Overlapped with the next step's
        // first forward pass (the steady state of back-to-back steps), only what outlasts that
        // pass is exposed.
        double left = params * 2;
        const auto bucket = static_cast<double>(p.bucket);
        double gather = 0;
        while (left > 0) {
          const double b = std::min(left, bucket);
          left -= b;
          auto d = run_comm(st, CommGroup::kDp, Kind::kAllGather, static_cast<std::int64_t>(b),
                            dp_group(st, 1, p.data_parallel()), g.t + gather);
          if (!d) return d.error();
          gather += *d;
        }
        const double hidden = p.overlap_param_gather ? std::max(0.0, g.first_fwd_s) : 0.0;
        const double exposed = std::max(0.0, gather - hidden);
        g.t += exposed;
        g.exposed[static_cast<int>(CommGroup::kDp)] += exposed;
      }
      g.done = true;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<CommModel> make_ideal_comm(const topology::Topology& topo, const Scenario& s) {
  return std::make_unique<IdealComm>(topo, s);
}

std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s) {
  return std::make_unique<AnalyticalComm>(topo, s);
}

std::unique_ptr<CommModel> make_packet_comm(const topology::Topology& topo, const Scenario& s,
                                            pdes::Sync& sync, pdes::EngineOptions engine) {
  return std::make_unique<PacketComm>(topo, s, sync, std::move(engine));
}

Result<StepResult> run_step(const Scenario& s, const topology::Topology& topo, CommModel& comm,
                            const std::function<bool(double)>& progress) {
  if (comm.wants_all_ops()) {
    ListingComm listing;
    Step first{s, topo, listing, {}, {}, 1, 1, 1, {}, {}, {}, {}, {}, {}, {}};
    if (auto ok = first.run(); !ok) return ok.error();
    if (auto ok = comm.prepare(listing.ops); !ok) return ok.error();
  }
  Step step{s, topo, comm, progress, {}, 1, 1, 1, {}, {}, {}, {}, {}, {}, {}};
  if (auto ok = step.run(); !ok) {
    if (ok.error().message != "interrupted") return ok.error();
    step.out.complete = false;  // what is done so far
    step.out.interrupted = true;
  }
  StepResult& r = step.out;
  std::uint32_t crit = 0;
  for (std::uint32_t st = 0; st < step.stages.size(); ++st) {
    if (step.stages[st].t > step.stages[crit].t) crit = st;
  }
  const auto& g = step.stages[crit];
  r.step_s = g.t;
  r.critical_stage = crit;
  r.compute_s = g.compute;
  r.bubble_s = g.bubble;
  r.optimizer_s = g.optimizer;
  for (int i = 0; i < kCommGroups; ++i) {
    r.exposed_s[i] = g.exposed[i];
    if (r.collectives[i] > 0) r.busbw_gbs[i] /= static_cast<double>(r.collectives[i]);
  }
  const double tokens = static_cast<double>(s.par.global_batch) * s.model.seq_len;
  r.model_flops = s.model.model_flops_per_token() * tokens;
  r.peak_flops = s.model.precision == "fp8" ? s.gpu.fp8_flops : s.gpu.bf16_flops;
  r.mfu = mfu(r.model_flops, r.step_s, s.par.world(), r.peak_flops);
  std::vector<double> cct;
  for (const CollectiveRecord& c : r.colls) {
    if (c.group != CommGroup::kTp) cct.push_back((c.end_s - c.start_s) * 1e6);
  }
  if (!cct.empty()) {
    std::sort(cct.begin(), cct.end());
    r.cct_p50_us = nearest_rank(cct, 0.5);
    r.cct_p99_us = nearest_rank(cct, 0.99);
    r.cct_max_us = cct.back();
  }
  LogHistogram fct;
  for (const auto& [key, d] : step.seen) {
    if (d.cost.message_fct) fct.merge(*d.cost.message_fct, d.repeats);
  }
  r.messages = fct.count();
  r.fct_p50_us = fct.quantile(0.5) * 1e-6;
  r.fct_p99_us = fct.quantile(0.99) * 1e-6;
  r.fct_max_us = fct.quantile(1.0) * 1e-6;
  // Flows and links: each distinct collective's connections and ports, times its repetitions,
  // in the order the collectives first ran.
  std::vector<const Step::Distinct*> order;
  for (const auto& [key, d] : step.seen) order.push_back(&d);
  std::sort(order.begin(), order.end(),
            [](const Step::Distinct* a, const Step::Distinct* b) { return a->first < b->first; });
  std::vector<LinkRow> links(topo.ports.size());
  for (const Step::Distinct* d : order) {
    const CommCost& c = d->cost;
    if (c.connections) {
      for (std::size_t i = 0; i < c.connections->size(); ++i) {
        const nic::QpStats& a = c.rdma->endpoints[2 * i];
        const nic::QpStats& b = c.rdma->endpoints[2 * i + 1];
        FlowRow f;
        f.collective = d->first;
        f.repeats = d->repeats;
        f.src_nic = (*c.connections)[i].a;
        f.dst_nic = (*c.connections)[i].b;
        f.bytes = a.bytes + b.bytes;
        f.messages = a.messages + b.messages;
        f.packets = a.packets + b.packets;
        f.retransmitted = a.retransmitted + b.retransmitted;
        f.ecn_marked = a.ecn_received + b.ecn_received;
        r.flows.push_back(f);
      }
    }
    if (c.ports) {
      const double k = d->repeats;
      for (const auto& [p, ps] : *c.ports) {
        LinkRow& l = links[p];
        l.bytes += k * static_cast<double>(ps.bytes);
        l.packets += k * static_cast<double>(ps.packets);
        l.ecn_marks += k * static_cast<double>(ps.ecn_marks);
        l.pause_sent += k * static_cast<double>(ps.pause_sent);
        l.drops += k * static_cast<double>(ps.drops());
        l.busy_s += k * static_cast<double>(ps.busy_ps) * 1e-12;
        l.paused_s += k * static_cast<double>(ps.paused_ps) * 1e-12;
      }
    }
  }
  for (std::uint32_t p = 0; p < links.size(); ++p) {
    if (links[p].packets == 0 && links[p].pause_sent == 0 && links[p].drops == 0) continue;
    links[p].port = p;
    links[p].node = topo.ports[p].node;
    links[p].link = topo.ports[p].link;
    links[p].tier = topo.nodes[topo.ports[p].node].tier;
    r.links.push_back(links[p]);
  }
  std::uint64_t h = hash_combine(0, static_cast<std::uint64_t>(std::llround(r.step_s * 1e12)));
  for (std::uint64_t d : step.digests) h = hash_combine(h, d);
  r.digest = h;
  return std::move(r);
}

}  // namespace stepsim::workload
