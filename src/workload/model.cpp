#include "stepsim/workload/model.hpp"

#include <algorithm>

namespace stepsim::workload {

std::int64_t ModelSpec::attention_params() const {
  const std::int64_t h = hidden;
  if (mla()) {
    const std::int64_t H = heads;
    const std::int64_t q =
        q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank * H * qk_dim() : h * H * qk_dim();
    return q + h * (kv_lora_rank + qk_rope_dim) +
           std::int64_t{kv_lora_rank} * H * (qk_nope_dim + v_head_dim) + H * v_head_dim * h;
  }
  return 2 * h * attn_width() + 2 * h * (std::int64_t{kv()} * head_dim());
}

std::int64_t ModelSpec::attention_replicated_params() const {
  if (!mla()) return 0;
  const std::int64_t h = hidden;
  return (q_lora_rank > 0 ? h * q_lora_rank : 0) + h * (kv_lora_rank + qk_rope_dim);
}

std::int64_t ModelSpec::ffn_params() const {
  return (activation == "swiglu" ? 3 : 2) * std::int64_t{hidden} * ffn;
}

std::int64_t ModelSpec::dense_ffn_params() const {
  const std::int64_t f = experts > 0 && dense_ffn > 0 ? dense_ffn : ffn;
  return (activation == "swiglu" ? 3 : 2) * std::int64_t{hidden} * f;
}

std::int64_t ModelSpec::layer_params(bool moe) const {
  if (experts == 0 || !moe) return attention_params() + dense_ffn_params();
  return attention_params() + std::int64_t{experts + shared_experts} * ffn_params() +
         std::int64_t{hidden} * experts;
}

std::int64_t ModelSpec::layer_active_params(bool moe) const {
  if (experts == 0 || !moe) return attention_params() + dense_ffn_params();
  return attention_params() + std::int64_t{top_k + shared_experts} * ffn_params() +
         std::int64_t{hidden} * experts;
}

double ModelSpec::active_params() const {
  const int dense = experts > 0 ? std::min(dense_layers, layers) : layers;
  const double h = hidden;
  return static_cast<double>(dense) * static_cast<double>(layer_active_params(false)) +
         static_cast<double>(layers - dense) * static_cast<double>(layer_active_params(true)) +
         mtp_layers * (static_cast<double>(layer_active_params(moe_layer(layers - 1))) + 2 * h * h);
}

std::int64_t ModelSpec::embedding_params() const {
  return std::int64_t{vocab} * hidden * (tied_embeddings ? 1 : 2);
}

std::int64_t ModelSpec::total_params() const {
  const int dense = experts > 0 ? std::min(dense_layers, layers) : layers;
  const std::int64_t h = hidden;
  return std::int64_t{dense} * layer_params(false) +
         std::int64_t{layers - dense} * layer_params(true) +
         std::int64_t{mtp_layers} * (layer_params(moe_layer(layers - 1)) + 2 * h * h) +
         embedding_params();
}

double ModelSpec::model_flops_per_token() const {
  const double L = layers + mtp_layers;
  const double h = hidden;
  // The attention core: 2 s H (qk + v) per token forward, 3 x that with the backward.
  const double core = mla() ? 6.0 * L * seq_len * heads * static_cast<double>(qk_dim() + v_dim())
                            : 12.0 * L * static_cast<double>(attn_width()) * seq_len;
  return 6.0 * (active_params() + (1 + mtp_layers) * h * vocab) + core;
}

double ModelSpec::palm_flops_per_token() const {
  const double L = layers + mtp_layers;
  if (mla()) {
    return 6.0 * active_params() +
           6.0 * L * heads * static_cast<double>(qk_dim() + v_dim()) * seq_len;
  }
  return 6.0 * active_params() + 12.0 * L * heads * static_cast<double>(head_dim()) * seq_len;
}

double megatron_flops(const ModelSpec& m, std::int64_t batch, bool recompute) {
  const double B = static_cast<double>(batch);
  const double s = m.seq_len;
  const double l = m.layers;
  const double h = m.hidden;
  const double V = m.vocab;
  return recompute ? 96.0 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
                   : 72.0 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

double mfu(double flops_per_step, double step_seconds, std::int64_t gpus, double peak_flops) {
  if (step_seconds <= 0 || gpus <= 0 || peak_flops <= 0) return 0;
  return flops_per_step / step_seconds / static_cast<double>(gpus) / peak_flops;
}

}  // namespace stepsim::workload
