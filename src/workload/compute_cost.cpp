// The compute model (see compute_cost.hpp; docs/workload.md, "Compute", states each assumption
// with its source). Modelling choices, each stated once:
// - GEMMs (compute.gemm_model tiles): NVIDIA's "Matrix Multiplication Background" guide (Deep
//   Learning Performance docs): the output is cut into tiles, one per SM at a time, in waves;
//   a partial last wave or partial edge tiles cost a whole wave / tile (tile and wave
//   quantization). The peak x gpu.gemm_efficiency is what a wave of full tiles achieves in its
//   main loop (fitted, gpu_spec.cpp); each wave then stores its tiles' BF16 outputs at the HBM
//   rate (the epilogue, not overlapped with the tensor cores): DeepGEMM's H800 FP8 rates fall
//   with K as K / (K + K0), K0 about 520 (README table, 2025-04-09), and the HBM store predicts
//   K0 = achieved peak / (HBM x memory efficiency), 580 at its rates. A GEMM is never faster
//   than reading its operands and writing its output.
// - Backward GEMMs: the input gradient (m x n by n x k) and the weight gradient (k x m by m x
//   n) of each linear, each as many FLOPs as the forward.
// - Attention (compute.attention flash): FlashAttention-2 (Dao 2023) tiles Q and K/V in blocks;
//   with a causal mask the blocks above the diagonal are skipped, the diagonal ones computed
//   whole. Each query block pays a fixed cost (load Q, rescale and write O) assumed equal to
//   one key block's, once per kernel, and CP's ring attention runs one kernel per ring step.
//   Backward: FlashAttention's backward runs 5 matmuls per block against the forward's 2 (it
//   recomputes QK^T): 2.5x the forward's FLOPs, at a lower rate (kAttentionBackwardRate).
//   Attention runs in BF16 (also in FP8 training).
// - Elementwise kernels: compute.elementwise_bytes per token and hidden unit (norms, residual
//   adds, dropout) plus the FFN activation on the FFN's width (ffn_activation_bytes).
// - Cross entropy: memory-bound over the TP shard's logits, beside the output layer's GEMMs.
// - FP8 casts (model.precision fp8, current scaling): fp8_cast.hpp; memory-bound, at the HBM
//   rate of the elementwise kernels, outside the GEMMs (never hidden by TP overlap).
#include "stepsim/workload/compute_cost.hpp"

#include "src/workload/fp8_cast.hpp"
#include "src/workload/host_launch.hpp"
#include "src/workload/moe/routing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/pipeline_layout.hpp"

namespace stepsim::workload {

namespace {

// FlashAttention's backward runs below its forward's rate (dQ accumulated across key blocks,
// the softmax recomputed): FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608, figures of
// H100 SXM5 BF16, head dim 128, 16k tokens) 561 TFLOP/s backward against 648 forward, cuDNN's
// kernels 516 against 595: 0.87 of the forward's rate in both, each pass's FLOPs counted as here.
constexpr double kAttentionBackwardRate = 561.0 / 648.0;

// The forward's rate where one is published for the GPU's tensor cores: cuDNN's fused attention
// (Transformer Engine's default backend on Hopper) reaches 595 TFLOP/s on an H100 SXM5 (the same
// FlashAttention-3 figure: BF16, head dim 128, 16k tokens, no mask), 0.602 of the BF16 peak; the
// model's per-query-block fixed cost (1/128 at 16k tokens) is on top, so its blocks run at
// 0.602 x (1 + 1/128). H800 and H200 share the H100's SMs. Elsewhere: the GEMM efficiency.
double published_attention_efficiency(const std::string& gpu) {
  if (gpu == "h100" || gpu == "h800" || gpu == "h200") return 595.0 / 989.0 * (1 + 1.0 / 128);
  return 0;
}

// The peak of a low-precision GEMM: model.precision's (fp8, mxfp8, nvfp4), FP8 when the model
// is in BF16 (a caller asking for an FP8 GEMM of a BF16 model). One fitted efficiency covers
// them all (fp8_gemm_efficiency): no MXFP8 or NVFP4 measurement of its own here.
double low_precision_peak(const Scenario& s) {
  return s.model.precision == "bf16" ? s.gpu.fp8_flops : gpu::peak_flops(s.gpu, s.model.precision);
}

double gemm_peak(const Scenario& s, bool fp8) {
  const double eff16 =
      s.compute.gemm_efficiency > 0 ? s.compute.gemm_efficiency : s.gpu.gemm_efficiency;
  const double eff8 =
      s.compute.gemm_efficiency > 0 ? s.compute.gemm_efficiency : s.gpu.fp8_gemm_efficiency;
  return fp8 ? low_precision_peak(s) * eff8 : s.gpu.bf16_flops * eff16;
}

// `groups` m x n outputs as the tiles of whole waves cover them (elements): the tiles of every
// group share the waves (a grouped GEMM).
double quantized_mn(double m, double n, double groups, double tm, double tn, double sms) {
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * std::ceil(groups);
  return std::ceil(tiles / sms) * sms * tm * tn;
}

// One linear layer (m tokens, n outputs, k inputs): its forward, and its backward (the
// input gradient and the weight gradient). `groups` experts at once.
struct Linear {
  double m = 0, n = 0, k = 0, groups = 1;
};

double fwd_seconds(const Scenario& s, const Linear& l, bool fp8) {
  return gemm_seconds(s, l.m, l.n, l.k, fp8, l.groups);
}

double bwd_seconds(const Scenario& s, const Linear& l, bool fp8) {
  return gemm_seconds(s, l.m, l.k, l.n, fp8, l.groups) +  // input gradient
         gemm_seconds(s, l.k, l.n, l.m, fp8, l.groups);   // weight gradient
}

}  // namespace

double gemm_seconds(const Scenario& s, double m, double n, double k, bool fp8, double groups) {
  const double peak = gemm_peak(s, fp8);
  if (s.compute.gemm_model == "flat") return 2 * m * n * k * groups / peak;
  const double tm = s.compute.gemm_tile_m;
  const double tn = s.compute.gemm_tile_n;
  const double sms = s.gpu.sms;
  // The library's choice among tile shapes: tm x tn either way round, or half as tall (the
  // same rate per wave assumed for each).
  const double mn = std::min(
      {quantized_mn(m, n, groups, tm, tn, sms), quantized_mn(m, n, groups, tn, tm, sms),
       quantized_mn(m, n, groups, tm / 2, tn, sms), quantized_mn(m, n, groups, tn, tm / 2, sms)});
  // Each tile's epilogue (its BF16 output stored after the main loop, the tensor cores idle):
  // a wave's outputs at the HBM rate. The same time in every precision, so FP8 gains least on
  // GEMMs of short K (a whole wave's rate falls as K / (K + peak / HBM), both effective).
  const double epilogue = 2 * mn / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency);
  const double compute = 2 * mn * k / peak + epilogue;
  // Operand bytes (block scales included); the output in BF16.
  const double in = !fp8                          ? 2
                    : s.model.precision == "bf16" ? 1
                                                  : gpu::operand_bytes(s.model.precision);
  const double bytes = groups * (in * (m * k + k * n) + 2 * m * n);
  return std::max(compute, bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency));
}

Fp8CastBytes fp8_cast_bytes(const Scenario& s, double m, double n, double k, double groups) {
  if (s.model.precision != "fp8") return {};
  // amax (read 2) + cast-transpose (read 2, write 1 + 1) per element of each BF16 tensor.
  constexpr double kPerElement = 6;
  // Micro-batches per step (1 when the scenario sets no data-parallel size or GPU count).
  const Parallelism& p = s.par;
  const bool sized = (p.dp > 0 || p.gpus > 0) && p.micro_batch > 0 && p.data_parallel() > 0;
  const double mb = sized ? static_cast<double>(std::max<std::int64_t>(p.micro_batches(), 1)) : 1;
  return {groups * kPerElement * (m * k + k * n / mb), groups * kPerElement * m * n};
}

double gemm_achieved(const Scenario& s, double m, double n, double k, bool fp8, double groups) {
  const double peak = fp8 ? low_precision_peak(s) : s.gpu.bf16_flops;
  return 2 * m * n * k * groups / gemm_seconds(s, m, n, k, fp8, groups) / peak;
}

double cp_attention_blocks(double blocks, int cp, int rank, bool causal, bool balanced) {
  const double c = cp;
  if (!causal) return blocks * blocks / c;
  // Query rows [a, a + k) need sum (i + 1) = k a + k (k + 1) / 2 key blocks.
  auto rows = [](double a, double k) { return k * a + k * (k + 1) / 2; };
  if (!balanced || cp == 1) {
    const double k = blocks / c;
    return rows(rank * k, k);
  }
  const double k = blocks / (2 * c);
  return rows(rank * k, k) + rows((2 * c - 1 - rank) * k, k);
}

double attention_fwd_seconds(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const double peak16 =
      s.gpu.bf16_flops *
      (s.compute.gemm_efficiency > 0 ? s.compute.gemm_efficiency : s.gpu.gemm_efficiency);
  // Per head and pair of query and key: 2 (qk + v) FLOPs (QK^T and PV); 4 head_dim for MHA.
  const double pair = 2.0 * static_cast<double>(m.qk_dim() + m.v_dim());
  if (s.compute.attention == "formula") {
    const double T = static_cast<double>(p.micro_batch) * m.seq_len / p.cp;
    if (!m.mla()) return 4 * T * m.seq_len * static_cast<double>(m.attn_width()) / p.tp / peak16;
    return pair * T * m.seq_len * m.heads / p.tp / peak16;
  }
  const double published = published_attention_efficiency(s.gpu.name);
  const double eff = s.compute.attention_efficiency > 0 ? s.compute.attention_efficiency
                     : published > 0                    ? published
                                                        : peak16 / s.gpu.bf16_flops;
  const double b = s.compute.attention_block;
  const double nb = std::max(1.0, m.seq_len / b);  // a shorter sequence still costs a block
  // The slowest CP rank: the last one without load balancing (every rank alike with it).
  double blocks = 0;
  for (int r = 0; r < p.cp; ++r) {
    blocks = std::max(blocks, cp_attention_blocks(nb, p.cp, r, m.causal, p.cp_load_balance));
  }
  // A fixed cost of one key block per query block and kernel: nb / cp rows, cp ring steps.
  const double overhead = nb;
  const double per_block = b * b * pair;
  const double heads = static_cast<double>(m.heads) / p.tp;
  return static_cast<double>(p.micro_batch) * heads * (blocks + overhead) * per_block /
         (s.gpu.bf16_flops * eff);
}

double overlapped_seconds(double comm_s, double gemm_s, int chunks) {
  if (gemm_s <= 0) return comm_s;
  const double n = std::max(1, chunks);
  return std::max(comm_s + gemm_s / n, comm_s / n + gemm_s);
}

PipelineShape pipeline_shape(const Scenario& s) {
  PipelineShape shape;
  shape.stages = s.par.pp;
  shape.chunks = s.par.vpp;
  shape.micro_batches = static_cast<int>(s.par.micro_batches());
  shape.first_layers = s.par.first_stage_layers;
  shape.last_layers = s.par.last_stage_layers;
  // Megatron-Core's interleaved schedule with overlap_moe_expert_parallel_comm: one more warm-up.
  if (s.moe.overlap == "1f1b" && s.model.experts > 0 && s.par.ep > 1 && s.par.vpp > 1) {
    shape.extra_warmup = 1;
  }
  // DualPipe: two mirrored model stages per GPU (validate() requires vpp 1).
  if (s.moe.overlap == "dualpipe") {
    shape.dualpipe = true;
    shape.chunks = 2;
  }
  if (s.par.layout.empty()) return shape;
  // validate() checked it: parse errors cannot happen here.
  const std::vector<LayoutStage> v = parse_pipeline_layout(s.par.layout).value();
  STEPSIM_CHECK(static_cast<int>(v.size()) == s.par.pp * s.par.vpp,
                "parallel.layout's virtual stages are not pp x vpp (validate() checks it)");
  for (std::size_t vi = 0; vi < v.size(); ++vi) {
    shape.layout.push_back(v[vi].layers);
    if (v[vi].mtp > 0) shape.mtp_virtual = static_cast<int>(vi);
  }
  return shape;
}

namespace {

using LinearGroups = std::array<std::vector<Linear>, 4>;

double sum_of(const std::array<double, 4>& a) {
  double sum = 0;
  for (const double x : a) sum += x;
  return sum;
}

// The attention block's linears on one GPU (Megatron's column / row split over TP): the Q/K/V
// projections (group 0) and the output projection (group 1). MLA's down projections (to the
// latents) are whole on every TP rank.
void attention_linears(const ModelSpec& m, double T, double tp, LinearGroups& lin) {
  const double h = m.hidden;
  if (m.mla()) {
    const double H = m.heads;
    const double qk = static_cast<double>(m.qk_dim());
    if (m.q_lora_rank > 0) {
      lin[0].push_back({T, static_cast<double>(m.q_lora_rank), h});
      lin[0].push_back({T, H * qk / tp, static_cast<double>(m.q_lora_rank)});
    } else {
      lin[0].push_back({T, H * qk / tp, h});
    }
    lin[0].push_back({T, static_cast<double>(m.kv_lora_rank + m.qk_rope_dim), h});
    lin[0].push_back(
        {T, H * (m.qk_nope_dim + m.v_head_dim) / tp, static_cast<double>(m.kv_lora_rank)});
    lin[1].push_back({T, h, H * m.v_head_dim / tp});
  } else {
    const double q = static_cast<double>(m.attn_width());
    const double qkv_out = q + 2.0 * m.kv() * static_cast<double>(m.head_dim());
    lin[0].push_back({T, qkv_out / tp, h});
    lin[1].push_back({T, h, q / tp});
  }
}

// The FFN's linears: FC1 (group 2) and FC2 (group 3), dense or the local experts' grouped
// GEMMs. Returns the forward and backward seconds of what is outside the groups (the router
// and the shared experts).
std::pair<double, double> ffn_linears(const Scenario& s, bool moe, double T, LinearGroups& lin) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const double h = m.hidden;
  const double tp = p.tp;
  const bool fp8 = m.precision != "bf16";  // any low-precision GEMM
  const double ffn = m.experts > 0 && !moe && m.dense_ffn > 0 ? m.dense_ffn : m.ffn;
  const double up = m.activation == "swiglu" ? 2 : 1;  // SwiGLU's gate and up projections
  double router_f = 0;
  double router_b = 0;
  if (!moe) {
    lin[2].push_back({T, up * ffn / tp, h});
    lin[3].push_back({T, h, ffn / tp});
    return {router_f, router_b};
  }
  // Shared experts: a dense FFN of shared_experts x ffn, split over TP like one.
  if (m.shared_experts > 0) {
    const double sh = static_cast<double>(m.shared_experts) * ffn;
    const Linear s1{T, up * sh / tp, h};
    const Linear s2{T, h, sh / tp};
    router_f += fwd_seconds(s, s1, fp8) + fwd_seconds(s, s2, fp8);
    router_b += bwd_seconds(s, s1, fp8) + bwd_seconds(s, s2, fp8);
  }
  // Each of the experts / ep local experts takes its share of the EP group's routed tokens,
  // on the busiest EP rank (moe.routing; capacity_factor when balanced).
  // With expert TP (parallel.etp) each expert's FFN is split etp ways over the tokens of etp
  // GPUs' sequence-parallel shares (etp / tp of the micro-batch's on each).
  const double local = static_cast<double>(m.experts) / p.ep;
  const double etp = p.expert_tp();
  const double tokens = T * p.ep * (etp / tp) * m.top_k * moe_load(s).tokens / m.experts;
  lin[2].push_back({tokens, up * ffn / etp, h, local});
  lin[3].push_back({tokens, h, ffn / etp, local});
  const Linear router{T, static_cast<double>(m.experts), h / tp};
  router_f += fwd_seconds(s, router, fp8);
  router_b += bwd_seconds(s, router, fp8);
  return {router_f, router_b};
}

// The FFN activation's HBM bytes per token (forward), on the FFN's width and split over TP:
// GELU reads and writes the FC1 output (4 bytes per FFN unit, Megatron's fused bias-GELU);
// SwiGLU reads the gate and up projections and writes their product (6). Dense FFNs and shared
// experts; an MoE layer's routed activation is in gpu.moe_elementwise_bytes.
double ffn_activation_bytes(const ModelSpec& m, bool moe) {
  const double per_unit = m.activation == "swiglu" ? 6 : 4;
  if (!moe) return per_unit * (m.experts > 0 && m.dense_ffn > 0 ? m.dense_ffn : m.ffn);
  return per_unit * static_cast<double>(m.shared_experts) * m.ffn;
}

// Multi-token prediction: each MTP module is a 2h -> h projection, a layer like the model's
// last, and the output layer, added to the logits' costs. Its layer's TP / EP collectives are
// not modelled (its compute only).
void add_mtp(const Scenario& s, bool moe, double T, LayerCosts& k) {
  const ModelSpec& m = s.model;
  const bool fp8 = m.precision != "bf16";  // any low-precision GEMM
  const double h = m.hidden;
  const LayerCosts last = m.moe_layer(m.layers - 1) == moe ? k : layer_costs(s, !moe);
  const Linear mtp_proj{T, h / s.par.tp, 2 * h};
  k.mtp_fwd_s = m.mtp_layers * (fwd_seconds(s, mtp_proj, fp8) + last.fwd_s + sum_of(last.fwd_hide));
  k.mtp_bwd_s = m.mtp_layers * (bwd_seconds(s, mtp_proj, fp8) + last.bwd_s + sum_of(last.bwd_hide));
  k.logits_fwd_s += m.mtp_layers * (fwd_seconds(s, mtp_proj, fp8) + last.fwd_s +
                                    sum_of(last.fwd_hide) + k.logits_fwd_s);
  k.logits_bwd_s += m.mtp_layers * (bwd_seconds(s, mtp_proj, fp8) + last.bwd_s +
                                    sum_of(last.bwd_hide) + k.logits_bwd_s);
}

// The layer's kernel launches besides its attention and expert linears' (host_launch.hpp):
// compute.layer_kernels (a third in the forward), the attention core (one kernel each way),
// the router's GEMMs (outside FP8) and the shared experts' two linears.
HostKernels layer_other_kernels(const Scenario& s, bool moe) {
  const double other = s.compute.layer_kernels;
  HostKernels k{other / 3 + 1, 2 * other / 3 + 1};
  if (!moe) return k;
  const HostKernels router = linear_kernels(s, 1, false);
  const HostKernels shared = linear_kernels(s, 2 * static_cast<double>(s.model.shared_experts));
  k.fwd += router.fwd + shared.fwd;
  k.bwd += router.bwd + shared.bwd;
  return k;
}

}  // namespace

LayerCosts layer_costs(const Scenario& s, bool moe_layer) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const ComputeParams& c = s.compute;
  const double T = static_cast<double>(p.micro_batch) * m.seq_len / p.cp;  // tokens per GPU
  const double h = m.hidden;
  const double tp = p.tp;
  const bool fp8 = m.precision != "bf16";  // any low-precision GEMM
  const double hbm = s.gpu.hbm_bandwidth * c.memory_efficiency;
  // The layer's linears in four groups (TP overlap pairs them with its four collectives).
  LinearGroups lin;
  attention_linears(m, T, tp, lin);
  const bool moe = m.experts > 0 && moe_layer;
  const auto [router_f, router_b] = ffn_linears(s, moe, T, lin);
  std::array<double, 4> gf{};
  std::array<double, 4> gb{};
  std::array<double, 4> dgrad{};  // the backward's input-gradient GEMMs
  double wgrad = 0;               // and its weight-gradient ones
  double gemm_f = router_f;
  double gemm_b = router_b;
  Fp8CastBytes cast;  // FP8 current scaling's casts of the layer's linears (never hidden)
  HostKernels launches = layer_other_kernels(s, moe);
  for (std::size_t i = 0; i < lin.size(); ++i) {
    for (const Linear& l : lin[i]) {
      const HostKernels lk = linear_kernels(s, l.groups);
      launches.fwd += lk.fwd;
      launches.bwd += lk.bwd;
      const Fp8CastBytes c8 = fp8_cast_bytes(s, l.m, l.n, l.k, l.groups);
      cast.fwd += c8.fwd;
      cast.bwd += c8.bwd;
      gf[i] += fwd_seconds(s, l, fp8);
      gb[i] += bwd_seconds(s, l, fp8);
      dgrad[i] += gemm_seconds(s, l.m, l.k, l.n, fp8, l.groups);
      wgrad += gemm_seconds(s, l.k, l.n, l.m, fp8, l.groups);
    }
    gemm_f += gf[i];
    gemm_b += gb[i];
  }
  const double attn = attention_fwd_seconds(s);
  const double attn_b = c.attention == "formula" ? 2 * attn : 2.5 * attn / kAttentionBackwardRate;
  double elem = (c.elementwise_bytes * h / (p.sequence_parallel ? tp : 1) +
                 ffn_activation_bytes(m, moe) / tp) *
                T / hbm;
  // The routed pairs this GPU's experts take (EP spreads the group's T x top_k evenly).
  if (moe) elem += s.gpu.moe_elementwise_bytes * T * m.top_k * moe_load(s).tokens * h / hbm;
  const double ovh = c.kernel_overhead.seconds();
  LayerCosts k;
  k.attn_fwd_s = attn;
  k.attn_bwd_s = attn_b;
  // Megatron's TP overlap (sequence parallelism's all-gathers and reduce-scatters only): the
  // forward's AG, RS, AG, RS beside the QKV, projection, FC1 and FC2 GEMMs; the backward's four
  // beside the input-gradient GEMM of the same linears. MoE expert GEMMs are not overlapped.
  if (p.tp_overlap && p.sequence_parallel && p.tp > 1) {
    const std::size_t n = moe ? 2 : 4;
    for (std::size_t i = 0; i < n; ++i) {
      k.fwd_hide[i] = gf[i];
      k.bwd_hide[i] = dgrad[i];
    }
  }
  k.fwd_s = gemm_f - sum_of(k.fwd_hide) + attn + elem + cast.fwd / hbm + ovh;
  k.bwd_s = gemm_b - sum_of(k.bwd_hide) + attn_b + 2 * elem + cast.bwd / hbm + ovh;
  // Launch-bound passes: the host launches the pass's kernels one by one; when that takes
  // longer than the GPU runs them (the hidden GEMMs included), the pass takes the host's time.
  k.fwd_s += std::max(0.0, host_seconds(s, launches.fwd) - k.fwd_s - sum_of(k.fwd_hide));
  k.bwd_s += std::max(0.0, host_seconds(s, launches.bwd) - k.bwd_s - sum_of(k.bwd_hide));
  k.wgrad_s = wgrad;
  if (p.recompute == "full") k.recompute_s = k.fwd_s;
  if (p.recompute == "selective") k.recompute_s = attn;
  const Linear logits{T, static_cast<double>(m.vocab) / tp, h};
  // Megatron's fused vocabulary-parallel cross entropy, per logit of the TP shard: forward 14
  // bytes (the BF16 logits read, their FP32 softmax written and read back for the max and the
  // sum of exponentials), backward 6 (the softmax read, the BF16 gradient written).
  const double logit_count = T * static_cast<double>(m.vocab) / tp;
  k.logits_fwd_s = fwd_seconds(s, logits, fp8) + 14 * logit_count / hbm + ovh;
  k.logits_bwd_s = bwd_seconds(s, logits, fp8) + 6 * logit_count / hbm + ovh;
  k.output_fwd_s = k.logits_fwd_s;
  k.output_bwd_s = k.logits_bwd_s;
  if (m.mtp_layers > 0) add_mtp(s, moe, T, k);
  return k;
}

double layer_pass_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                          int stage, int chunk, PassKind kind, int layer) {
  const bool fwd = kind == PassKind::kForward;
  const bool last_layer = layer == layers_in(shape, s.model.layers, stage, chunk) - 1;
  double dt = fwd ? lc.fwd_s : lc.bwd_s;
  if (!fwd && s.par.recompute == "selective") dt += lc.recompute_s;
  if (last_layer) dt += chunk_extra_seconds(s, lc, shape, stage, chunk, kind);
  return dt;
}

double backward_part_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                             int stage, int chunk, GradPart grad, int layer) {
  if (grad == GradPart::kWeight) return lc.wgrad_s;
  const double whole = layer_pass_seconds(s, lc, shape, stage, chunk, PassKind::kBackward, layer);
  return grad == GradPart::kInput ? whole - lc.wgrad_s : whole;
}

double chunk_extra_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                           int stage, int chunk, PassKind kind) {
  const bool fwd = kind == PassKind::kForward;
  const bool loss = holds_loss(shape, stage, chunk);
  const bool mtp = s.model.mtp_layers > 0 && holds_mtp(shape, stage, chunk);
  if (loss && (mtp || s.model.mtp_layers == 0)) return fwd ? lc.logits_fwd_s : lc.logits_bwd_s;
  // parallel.layout with the MTP modules on a virtual stage of their own: their layers there,
  // every head's output layer on the loss's stage (Megatron's process_mtp_loss runs there).
  double dt = 0;
  if (loss) dt += (1 + s.model.mtp_layers) * (fwd ? lc.output_fwd_s : lc.output_bwd_s);
  if (mtp) dt += fwd ? lc.mtp_fwd_s : lc.mtp_bwd_s;
  return dt;
}

LayerParams layer_params(const Scenario& s, bool moe_layer) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const auto whole = static_cast<double>(m.attention_replicated_params());
  const double attn = (static_cast<double>(m.attention_params()) - whole) / p.tp + whole;
  if (m.experts == 0 || !moe_layer) {
    return {attn + static_cast<double>(m.dense_ffn_params()) / p.tp, 0.0};
  }
  const double shared = static_cast<double>(m.shared_experts) * m.ffn_params() / p.tp;
  return {
      attn + static_cast<double>(m.hidden) * m.experts + shared,
      static_cast<double>(m.experts) / p.ep * static_cast<double>(m.ffn_params()) / p.expert_tp()};
}

namespace {

// The MTP modules' parameters on one GPU (the last virtual stage's): their layers and
// projections.
LayerParams mtp_params(const Scenario& s) {
  const ModelSpec& m = s.model;
  if (m.mtp_layers == 0) return {};
  const LayerParams lp = layer_params(s, m.moe_layer(m.layers - 1));
  const double proj = 2.0 * m.hidden * m.hidden / s.par.tp;
  return {m.mtp_layers * (lp.dense + proj), m.mtp_layers * lp.expert};
}

}  // namespace

double embedding_params(const Scenario& s, const PipelineShape& shape, int stage, int chunk) {
  double e = 0;
  const double emb = static_cast<double>(s.model.vocab) * s.model.hidden / s.par.tp;
  const bool first = virtual_stage(shape, stage, chunk) == 0;
  if (first) e += emb;
  if (holds_loss(shape, stage, chunk) && !s.model.tied_embeddings) e += emb;
  // parallel.layout's MTP modules on a virtual stage of their own: Megatron builds an embedding
  // there (the modules embed the shifted tokens), a copy of the first stage's.
  if (s.model.mtp_layers > 0 && holds_mtp(shape, stage, chunk) &&
      !holds_loss(shape, stage, chunk) && !first) {
    e += emb;
  }
  return e;
}

LayerParams extra_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk) {
  LayerParams g{embedding_params(s, shape, stage, chunk) * s.par.grad_bytes, 0};
  if (s.model.mtp_layers > 0 && holds_mtp(shape, stage, chunk)) {
    const LayerParams mtp = mtp_params(s);
    g.dense += mtp.dense * s.par.grad_bytes;
    g.expert += mtp.expert * s.par.grad_bytes;
  }
  return g;
}

LayerParams layer_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk, int layer) {
  const ModelSpec& m = s.model;
  const LayerParams lp =
      layer_params(s, m.moe_layer(first_layer(shape, m.layers, stage, chunk) + layer));
  const double emb = layer == 0 ? embedding_params(s, shape, stage, chunk) : 0;
  LayerParams g{(lp.dense + emb) * s.par.grad_bytes, lp.expert * s.par.grad_bytes};
  if (m.mtp_layers > 0 && holds_mtp(shape, stage, chunk) &&
      layer == layers_in(shape, m.layers, stage, chunk) - 1) {
    const LayerParams mtp = mtp_params(s);
    g.dense += mtp.dense * s.par.grad_bytes;
    g.expert += mtp.expert * s.par.grad_bytes;
  }
  return g;
}

double stage_params(const Scenario& s, const PipelineShape& shape, int stage) {
  const ModelSpec& m = s.model;
  const LayerParams moe = layer_params(s, true);
  const LayerParams dense = layer_params(s, false);
  double params = 0;
  for (int c = 0; c < shape.chunks; ++c) {
    const int n = layers_in(shape, m.layers, stage, c);
    const int first = first_layer(shape, m.layers, stage, c);
    // Layers [first, first + n): the dense ones first (an MoE model's dense_layers lead).
    const int n_dense = m.experts == 0 ? n : std::clamp(m.dense_layers - first, 0, n);
    params += n_dense * (dense.dense + dense.expert) + (n - n_dense) * (moe.dense + moe.expert) +
              embedding_params(s, shape, stage, c);
  }
  if (stage == mtp_stage(shape)) {
    const LayerParams mtp = mtp_params(s);
    params += mtp.dense + mtp.expert;
  }
  return params;
}

double optimizer_seconds(const Scenario& s, double params) {
  const double shard = s.par.zero >= 1 ? params / s.par.data_parallel() : params;
  return shard * s.compute.optimizer_bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency) +
         s.compute.kernel_overhead.seconds();
}

}  // namespace stepsim::workload
