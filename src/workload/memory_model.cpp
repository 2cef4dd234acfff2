// The per-GPU memory model (memory_model.hpp). Sources, each stated once (docs/workload.md,
// "Memory", has every formula):
// - Model states: ZeRO (Rajbhandari et al., SC'20, sections 3.1 and 5) for mixed-precision Adam
//   (2 + 2 + 12 bytes per parameter) and its stages; Megatron-LM's distributed optimizer (bf16
//   weights, fp32 main gradients: 18 bytes, 6 + 12/d with the optimizer sharded).
// - MoE: routed-expert parameters divided by EP x expert-TP, their states sharded over the
//   expert data-parallel group (Megatron-Bridge's memory estimator).
// - Activations: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
//   Models" (MLSys 2023), section 4 and Table 2, generalized term by term to grouped-query
//   attention, SwiGLU, MoE and MLA; FlashAttention keeps the softmax statistics, not the scores.
// - The pipeline's micro-batches in flight: the forwards a stage runs before its first backward
//   (Megatron-LM's warm-up, pipeline_schedule.hpp), plus the one in progress.
#include "stepsim/workload/memory_model.hpp"

#include "src/workload/moe/routing.hpp"

#include <algorithm>
#include <cstdio>

#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {

namespace {

enum Term : std::size_t {
  kWeights,
  kGradients,
  kOptimizer,
  kEmbeddings,
  kExpertWeights,
  kExpertGradients,
  kExpertOptimizer,
  kFsdpUnsharded,
  kActivations,
  kRecomputeWorking,
  kEmbeddingActivations,
  kOutputActivations,
  kLogits,
  kMtpActivations,
  kMoeDispatch,
  kCudaContext,
  kNcclBuffers,
  kAllocatorReserve,
  kTermCount
};

// Bytes per parameter of the weights, the gradients and the optimizer states.
struct StateBytes {
  double weights = 2, gradients = 4, optimizer = 12;
};

StateBytes state_bytes(const Scenario& s) {
  if (s.memory.accounting == "zero") return {2, 2, 12};
  return {2, 4, 12};
}

// The states of `params` parameters with ZeRO stage `zero` over a group of `n` GPUs.
struct States {
  double weights = 0, gradients = 0, optimizer = 0;
};

States states(double params, const StateBytes& b, int zero, double n) {
  return {params * b.weights / (zero >= 3 ? n : 1), params * b.gradients / (zero >= 2 ? n : 1),
          params * b.optimizer / (zero >= 1 ? n : 1)};
}

// Tokens of one micro-batch on one CP rank.
double tokens(const Scenario& s) {
  return static_cast<double>(s.model.seq_len) / s.par.cp * static_cast<double>(s.par.micro_batch);
}

// Bytes per token of a token-wise tensor of width 1 that TP replicates unless sequence
// parallelism splits it: 1/t with sequence parallelism, else 1.
double replicated(const Scenario& s) {
  return s.par.sequence_parallel && s.par.tp > 1 ? 1.0 / s.par.tp : 1.0;
}

// Stored bytes per token of one FFN of `ffn` inner units, split over TP: GELU keeps FC1's output
// and the activation's (2 x 2 ffn); SwiGLU the gate and up projections and their product (3 x 2).
double ffn_bytes_per_token(const Scenario& s, double ffn) {
  return (s.model.activation == "swiglu" ? 6.0 : 4.0) * ffn / s.par.tp;
}

// The attention block of one layer (bytes), without the s^2 scores.
double attention_block_bytes(const Scenario& s) {
  const ModelSpec& m = s.model;
  const double T = tokens(s);
  const double h = m.hidden;
  const double rep = replicated(s);
  const double t = s.par.tp;
  const double drop = s.memory.dropout ? 1 : 0;
  const double heads = m.heads;
  const double kv = m.mla() ? heads : m.kv();
  const auto qk = static_cast<double>(m.qk_dim());
  const auto v = static_cast<double>(m.v_dim());
  double b = 4 * T * h * rep;                        // the norm's input and output
  b += 2 * T * (heads * qk + kv * qk + kv * v) / t;  // Q, K, V
  b += 2 * T * heads * v / t;                        // the projection's input
  b += drop * T * h * rep;                           // the dropout mask after it
  if (m.mla()) {                                     // latents and their norms, whole
    b += 2 * T * (2.0 * m.q_lora_rank + 2.0 * m.kv_lora_rank + m.qk_rope_dim);
  }
  if (s.compute.attention == "flash") b += 4 * T * heads / t;  // fp32 log-sum-exp per row
  return b;
}

// The softmax scores a non-Flash attention stores: softmax output 2 a T s, with dropout its
// mask a T s and output 2 a T s (Korthikanti et al.'s 5 a s^2 b).
double attention_scores_bytes(const Scenario& s) {
  if (s.compute.attention == "flash") return 0;
  const double drop = s.memory.dropout ? 1 : 0;
  return (2 + 3 * drop) * s.model.heads * tokens(s) * s.model.seq_len / s.par.tp;
}

// The MLP block of one layer: dense FFN, or router, shared and routed experts.
double mlp_block_bytes(const Scenario& s, bool moe) {
  const ModelSpec& m = s.model;
  const double T = tokens(s);
  const double h = m.hidden;
  const double rep = replicated(s);
  const double drop = s.memory.dropout ? 1 : 0;
  double b = 4 * T * h * rep + drop * T * h * rep;  // norm input and output, dropout mask
  if (m.experts == 0 || !moe) {
    const double f = m.experts > 0 && m.dense_ffn > 0 ? m.dense_ffn : m.ffn;
    return b + T * ffn_bytes_per_token(s, f);
  }
  b += T * ffn_bytes_per_token(s, static_cast<double>(m.shared_experts) * m.ffn);
  b += 2 * 4 * T * rep * m.experts;  // fp32 router logits and probabilities
  // Routed token copies on an EP rank (tokens gathered over TP): input and output of the
  // experts, and their FFN.
  const double copies = T * m.top_k * moe_load(s).tokens;  // busiest EP rank
  // With expert TP (etp < tp) a GPU holds etp / tp of them, each with 1 / etp of the FFN.
  const double share = static_cast<double>(s.par.expert_tp()) / s.par.tp;
  return b + copies * (2 * 2 * h * share + ffn_bytes_per_token(s, m.ffn));
}

// torchtitan's op-level selective checkpointing of a dense layer: the layer's input, the
// attention's output (and log-sum-exp) and every other matmul's output in forward order (Q, K, V,
// output projection, then W1, W3, W2 for SwiGLU or FC1, FC2 for GELU): the 1st, 3rd, ...
double op_policy_bytes(const Scenario& s) {
  const ModelSpec& m = s.model;
  const double T = tokens(s);
  const double h = m.hidden;
  const double rep = replicated(s);
  const double t = s.par.tp;
  const double hd = static_cast<double>(m.head_dim());
  const double f = m.experts > 0 && m.dense_ffn > 0 ? m.dense_ffn : m.ffn;
  std::vector<double> mm = {2 * T * m.heads * hd / t, 2 * T * m.kv() * hd / t,
                            2 * T * m.kv() * hd / t, 2 * T * h * rep};
  if (m.activation == "swiglu") {
    mm.insert(mm.end(), {2 * T * f / t, 2 * T * f / t, 2 * T * h * rep});
  } else {
    mm.insert(mm.end(), {2 * T * f / t, 2 * T * h * rep});
  }
  double b = 2 * T * h * rep + 2 * T * m.heads * hd / t + 4 * T * m.heads / t;
  for (std::size_t i = 0; i < mm.size(); i += 2) b += mm[i];
  return b;
}

// Parameters one GPU of a stage holds, by class.
struct StageParams {
  double dense = 0, expert = 0, embedding = 0, largest_layer = 0;
  int dense_layers = 0, moe_layers = 0;
};

StageParams stage_param_split(const Scenario& s, const PipelineShape& shape, int stage) {
  const ModelSpec& m = s.model;
  const LayerParams moe = layer_params(s, true);
  const LayerParams dense = layer_params(s, false);
  StageParams sp;
  for (int c = 0; c < shape.chunks; ++c) {
    const int n = layers_in(shape, m.layers, stage, c);
    const int first = first_layer(shape, m.layers, stage, c);
    const int n_dense = m.experts == 0 ? n : std::clamp(m.dense_layers - first, 0, n);
    sp.dense += n_dense * dense.dense + (n - n_dense) * moe.dense;
    sp.expert += (n - n_dense) * moe.expert;
    sp.embedding += embedding_params(s, shape, stage, c);
    sp.dense_layers += n_dense;
    sp.moe_layers += n - n_dense;
    if (n_dense > 0) sp.largest_layer = std::max(sp.largest_layer, dense.dense + dense.expert);
    if (n > n_dense) sp.largest_layer = std::max(sp.largest_layer, moe.dense + moe.expert);
  }
  if (stage == mtp_stage(shape) && m.mtp_layers > 0) {
    const LayerParams lp = layer_params(s, m.moe_layer(m.layers - 1));
    const double proj = 2.0 * m.hidden * m.hidden / s.par.tp;
    sp.dense += m.mtp_layers * (lp.dense + proj);
    sp.expert += m.mtp_layers * lp.expert;
  }
  return sp;
}

// NCCL's buffers: per communicator of more than one GPU, a ring's two peers on every channel
// (TP, CP, DP, expert DP), the pipeline's two neighbours and the all-to-all's peers on
// coll.p2p_channels_per_peer channels each (`auto`: 2, as the planner does not read the NICs'
// rate that NCCL 2.29+'s count takes).
double nccl_bytes(const Scenario& s) {
  const Parallelism& p = s.par;
  const double ch = s.memory.nccl_channels > 0 ? s.memory.nccl_channels : s.coll.channels;
  const double buf = static_cast<double>(s.memory.nccl_buffer);
  const double p2p = s.coll.p2p_channels_per_peer == collective::CollectiveParams::kP2pAuto
                         ? 2.0
                         : s.coll.p2p_channels_per_peer;
  auto ring = [&](double n) { return n > 1 ? ch * 2 * buf : 0.0; };
  const double dp = p.data_parallel();
  double b = ring(p.tp) + ring(p.cp) + ring(dp);
  if (p.pp > 1) b += 2 * p2p * buf;
  if (s.model.experts > 0 && p.ep > 1) {
    b += (p.ep - 1) * p2p * buf + ring(p.expert_dp());
  }
  return b;
}

// The in-flight forwards of `stage` at its first backward (the warm-up ones and the one in
// progress) and, of those, how many are of its first and of its last chunk.
struct InFlight {
  double dense_layers = 0, moe_layers = 0;  ///< layer passes held
  int first_chunk = 0, last_chunk = 0;
  int mtp_chunk = 0;  ///< of the chunk holding the MTP modules (when on this stage)
};

InFlight in_flight(const Scenario& s, const PipelineShape& shape, int stage) {
  const ModelSpec& m = s.model;
  const int p = shape.stages;
  const int v = shape.chunks;
  InFlight f;
  auto add = [&](int c, int times) {
    const int n = layers_in(shape, m.layers, stage, c);
    const int first = first_layer(shape, m.layers, stage, c);
    const int n_dense = m.experts == 0 ? n : std::clamp(m.dense_layers - first, 0, n);
    f.dense_layers += times * n_dense;
    f.moe_layers += times * (n - n_dense);
    f.first_chunk += virtual_stage(shape, stage, c) == 0 ? times : 0;
    f.last_chunk += holds_loss(shape, stage, c) ? times : 0;
    f.mtp_chunk += holds_mtp(shape, stage, c) ? times : 0;
  };
  if (shape.dualpipe) {  // the most its schedule holds: p + 1 chunks' worth (DeepSeek-V3, Table 2)
    const std::vector<int> held = peak_in_flight(shape, stage);
    for (int c = 0; c < v; ++c) add(c, held[static_cast<std::size_t>(c)]);
    return f;
  }
  const int passes = std::min(warmup_passes(shape, stage) + 1, shape.micro_batches * v);
  for (int k = 0; k < passes; ++k) add((k % (p * v)) / p, 1);  // Megatron's k-th forward's chunk
  return f;
}

void add_states(StageMemory& st, const Scenario& s, const StageParams& sp) {
  const Parallelism& p = s.par;
  const StateBytes b = state_bytes(s);
  const double dp = static_cast<double>(p.data_parallel()) * p.cp;
  const double edp = p.expert_dp();
  const States d = states(sp.dense, b, p.zero, dp);
  const States e = states(sp.expert, b, p.zero, edp);
  const States emb = states(sp.embedding, b, p.zero, dp);
  st.terms[kWeights].bytes = d.weights;
  st.terms[kGradients].bytes = d.gradients;
  st.terms[kOptimizer].bytes = d.optimizer;
  st.terms[kEmbeddings].bytes = emb.weights + emb.gradients + emb.optimizer;
  st.terms[kExpertWeights].bytes = e.weights;
  st.terms[kExpertGradients].bytes = e.gradients;
  st.terms[kExpertOptimizer].bytes = e.optimizer;
  if (p.zero >= 3) {  // gathered layers (the computing one and the prefetched), one's gradients
    st.terms[kFsdpUnsharded].bytes =
        sp.largest_layer * ((s.memory.fsdp_prefetch + 1) * b.weights + b.gradients) +
        sp.embedding * b.weights;
  }
}

// Per-layer activations of the scenario, computed once for every stage.
struct LayerActivations {
  double dense = 0, moe = 0;                  ///< stored per layer and micro-batch
  double working_dense = 0, working_moe = 0;  ///< recomputed in the backward, one layer
};

LayerActivations layer_activations(const Scenario& s) {
  const std::string& rc = s.par.recompute;
  LayerActivations a;
  a.dense = layer_activation_bytes(s, false, rc);
  a.moe = s.model.experts > 0 ? layer_activation_bytes(s, true, rc) : a.dense;
  if (rc != "none") {
    a.working_dense = layer_activation_bytes(s, false, "none") - (rc == "full" ? 0 : a.dense);
    a.working_moe = s.model.experts > 0
                        ? layer_activation_bytes(s, true, "none") - (rc == "full" ? 0 : a.moe)
                        : a.working_dense;
  }
  return a;
}

void add_activations(StageMemory& st, const Scenario& s, const PipelineShape& shape,
                     const StageParams& sp, const LayerActivations& a) {
  const ModelSpec& m = s.model;
  const double T = tokens(s);
  const double h = m.hidden;
  const double rep = replicated(s);
  const InFlight f = in_flight(s, shape, st.stage);
  st.terms[kActivations].bytes = f.dense_layers * a.dense + f.moe_layers * a.moe;
  st.terms[kRecomputeWorking].bytes = std::max(sp.dense_layers > 0 ? a.working_dense : 0.0,
                                               sp.moe_layers > 0 ? a.working_moe : 0.0);
  if (f.first_chunk > 0) {  // the embedding's dropout mask
    st.terms[kEmbeddingActivations].bytes =
        f.first_chunk * (s.memory.dropout ? 1 : 0) * T * h * rep;
  }
  if (f.last_chunk > 0) {
    // fp32, per output layer; memory.logits_copies of them alive in the loss's backward
    const double logits = s.memory.logits_copies * 4 * T * m.vocab / s.par.tp;
    st.terms[kOutputActivations].bytes = f.last_chunk * 4 * T * h * rep;  // final norm, input
    st.terms[kLogits].bytes = f.last_chunk * (1 + m.mtp_layers) * logits;
  }
  if (st.stage == mtp_stage(shape) && m.mtp_layers > 0) {
    const double layer = m.moe_layer(m.layers - 1) ? a.moe : a.dense;
    // Each module: two norms of h and their concatenation (2h), its layer, its output layer's
    // final norm and input.
    st.terms[kMtpActivations].bytes =
        f.mtp_chunk * m.mtp_layers * (layer + (4 + 4 + 4) * T * h * rep);
  }
  if (sp.moe_layers > 0) {  // all-to-all send and receive buffers of one layer's tokens
    const double copies = T * m.top_k * moe_load(s).tokens;  // busiest EP rank
    st.terms[kMoeDispatch].bytes =
        2 * 2 * copies * h * (static_cast<double>(s.par.expert_tp()) / s.par.tp);
  }
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1 << 30));
  return buf;
}

}  // namespace

const std::vector<const char*>& memory_term_names() {
  static const std::vector<const char*> names = {
      "weights",        "gradients",         "optimizer_states",        "embeddings",
      "expert_weights", "expert_gradients",  "expert_optimizer_states", "fsdp_unsharded",
      "activations",    "recompute_working", "embedding_activations",   "output_activations",
      "logits",         "mtp_activations",   "moe_dispatch_buffers",    "cuda_context",
      "nccl_buffers",   "allocator_reserve"};
  return names;
}

double StageMemory::total() const {
  double t = 0;
  for (const MemoryTerm& x : terms) t += x.bytes;
  return t;
}

double StageMemory::bytes(const std::string& name) const {
  for (const MemoryTerm& x : terms) {
    if (name == x.name) return x.bytes;
  }
  return 0;
}

std::vector<MemoryTerm> StageMemory::largest(std::size_t n) const {
  std::vector<MemoryTerm> v = terms;
  std::stable_sort(v.begin(), v.end(),
                   [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes > b.bytes; });
  v.resize(std::min(n, v.size()));
  return v;
}

double layer_activation_bytes(const Scenario& s, bool moe_layer, const std::string& recompute) {
  if (recompute == "full") return 2 * tokens(s) * s.model.hidden * replicated(s);
  // torchtitan's op policy is defined for dense MHA/GQA layers; MoE and MLA layers keep
  // Megatron's (attention-core) selective recomputation.
  if (recompute == "selective" && s.memory.selective == "op" && !s.model.mla() &&
      (s.model.experts == 0 || !moe_layer)) {
    return op_policy_bytes(s);
  }
  const double scores = recompute == "selective" ? 0 : attention_scores_bytes(s);
  return attention_block_bytes(s) + scores + mlp_block_bytes(s, moe_layer);
}

MemoryReport estimate_memory(const Scenario& s) {
  const PipelineShape shape = pipeline_shape(s);
  const LayerActivations act = layer_activations(s);
  const std::vector<const char*>& names = memory_term_names();
  const double nccl = nccl_bytes(s);
  MemoryReport r;
  r.capacity = static_cast<double>(s.gpu.hbm_bytes);
  r.stages.resize(static_cast<std::size_t>(shape.stages));
  for (int i = 0; i < shape.stages; ++i) {
    StageMemory& st = r.stages[static_cast<std::size_t>(i)];
    st.stage = i;
    st.terms.resize(kTermCount);
    for (std::size_t k = 0; k < kTermCount; ++k) st.terms[k].name = names[k];
    const StageParams sp = stage_param_split(s, shape, i);
    add_states(st, s, sp);
    add_activations(st, s, shape, sp, act);
    st.terms[kCudaContext].bytes = static_cast<double>(s.memory.cuda_context);
    st.terms[kNcclBuffers].bytes = nccl;
    st.terms[kAllocatorReserve].bytes = static_cast<double>(s.memory.reserve);
    if (st.total() > r.stages[static_cast<std::size_t>(r.peak_stage)].total()) r.peak_stage = i;
  }
  return r;
}

std::string memory_error(const MemoryReport& r, const std::string& what) {
  const StageMemory& st = r.stages[static_cast<std::size_t>(r.peak_stage)];
  std::string terms;
  for (const MemoryTerm& x : st.largest(3)) {
    terms += (terms.empty() ? "" : ", ") + std::string(x.name) + " " + gib(x.bytes);
  }
  const std::string top = st.largest(1).front().name;
  const bool states = top.find("weights") != std::string::npos ||
                      top.find("gradients") != std::string::npos ||
                      top.find("optimizer") != std::string::npos || top == "embeddings";
  const std::string hint =
      states ? "shard the model states: more parallel.tp (inside the NVLink domain) or "
               "parallel.pp, parallel.zero 1-3"
             : "cut the activations: parallel.recompute selective or full, a smaller "
               "parallel.micro_batch, more parallel.tp (with sequence_parallel), parallel.cp or "
               "parallel.pp";
  const bool experts = st.bytes("expert_weights") > 0;
  return (what.empty() ? "" : what + ": ") + "memory: pipeline stage " + std::to_string(st.stage) +
         " needs " + gib(st.total()) + " per GPU, more than gpu.hbm_bytes " + gib(r.capacity) +
         " (largest terms: " + terms + "); " + hint +
         (states && experts ? ", more parallel.ep for the experts" : "");
}

}  // namespace stepsim::workload
