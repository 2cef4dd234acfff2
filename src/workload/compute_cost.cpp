// The compute roofline (see compute_cost.hpp). Modelling choices, each stated once:
// - GEMM and attention FLOPs at the GPU's peak x compute.gemm_efficiency (FP8 GEMMs at the FP8
//   peak; attention runs in BF16), plus elementwise HBM traffic at HBM x
//   compute.memory_efficiency, plus a launch overhead. Backward is twice the forward.
// - Attention FLOPs are counted over the whole sequence, as the Megatron-LM and PaLM formulas
//   count them, so that gemm_efficiency is an efficiency against those formulas.
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {

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

double layer_pass_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                          int stage, int chunk, PassKind kind, int layer) {
  const bool fwd = kind == PassKind::kForward;
  const bool last_virtual = stage == shape.stages - 1 && chunk == shape.chunks - 1;
  const bool last_layer = layer == layers_in(shape, s.model.layers, stage, chunk) - 1;
  double dt = fwd ? lc.fwd_s : lc.bwd_s;
  if (!fwd && s.par.recompute == "selective") dt += lc.recompute_s;
  if (last_virtual && fwd && last_layer) dt += lc.logits_fwd_s;
  if (last_virtual && !fwd && last_layer) dt += lc.logits_bwd_s;
  return dt;
}

LayerParams layer_params(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const double attn = static_cast<double>(m.attention_params()) / p.tp;
  if (m.experts == 0) return {attn + static_cast<double>(m.ffn_params()) / p.tp, 0.0};
  return {attn + static_cast<double>(m.hidden) * m.experts,
          static_cast<double>(m.experts) / p.ep * static_cast<double>(m.ffn_params()) / p.tp};
}

double embedding_params(const Scenario& s, const PipelineShape& shape, int stage, int chunk) {
  double e = 0;
  const double emb = static_cast<double>(s.model.vocab) * s.model.hidden / s.par.tp;
  if (stage == 0 && chunk == 0) e += emb;
  if (stage == shape.stages - 1 && chunk == shape.chunks - 1 && !s.model.tied_embeddings) {
    e += emb;
  }
  return e;
}

LayerParams layer_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk, int layer) {
  const LayerParams lp = layer_params(s);
  const double emb = layer == 0 ? embedding_params(s, shape, stage, chunk) : 0;
  return {(lp.dense + emb) * s.par.grad_bytes, lp.expert * s.par.grad_bytes};
}

double stage_params(const Scenario& s, const PipelineShape& shape, int stage) {
  const LayerParams lp = layer_params(s);
  double params = 0;
  for (int c = 0; c < shape.chunks; ++c) {
    params += layers_in(shape, s.model.layers, stage, c) * (lp.dense + lp.expert) +
              embedding_params(s, shape, stage, c);
  }
  return params;
}

double optimizer_seconds(const Scenario& s, double params) {
  const double shard = s.par.zero >= 1 ? params / s.par.data_parallel() : params;
  return shard * s.compute.optimizer_bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency) +
         s.compute.kernel_overhead.seconds();
}

}  // namespace stepsim::workload
