#include "stepsim/workload/model.hpp"

namespace stepsim::workload {

std::int64_t ModelSpec::attention_params() const {
  const std::int64_t h = hidden;
  return 2 * h * h + 2 * h * (std::int64_t{kv()} * head_dim());
}

std::int64_t ModelSpec::ffn_params() const {
  return (activation == "swiglu" ? 3 : 2) * std::int64_t{hidden} * ffn;
}

std::int64_t ModelSpec::layer_params() const {
  if (experts == 0) return attention_params() + ffn_params();
  return attention_params() + std::int64_t{experts} * ffn_params() + std::int64_t{hidden} * experts;
}

std::int64_t ModelSpec::layer_active_params() const {
  if (experts == 0) return attention_params() + ffn_params();
  return attention_params() + std::int64_t{top_k} * ffn_params() + std::int64_t{hidden} * experts;
}

std::int64_t ModelSpec::embedding_params() const {
  return std::int64_t{vocab} * hidden * (tied_embeddings ? 1 : 2);
}

std::int64_t ModelSpec::total_params() const {
  return std::int64_t{layers} * layer_params() + embedding_params();
}

double ModelSpec::model_flops_per_token() const {
  const double L = layers;
  const double h = hidden;
  return 6.0 * (L * static_cast<double>(layer_active_params()) + h * vocab) +
         12.0 * L * h * seq_len;
}

double ModelSpec::palm_flops_per_token() const {
  const double n = static_cast<double>(layers) * static_cast<double>(layer_active_params());
  return 6.0 * n + 12.0 * layers * heads * static_cast<double>(head_dim()) * seq_len;
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
