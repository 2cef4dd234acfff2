#pragma once
/// A transformer model as the workload layer sees it: its shape, its parameter counts and the
/// FLOPs of training on it, with the formulas the published MFU figures use
/// (../shared/validation/mfu.md). Biases and normalization weights are left out of the counts,
/// as the formulas leave them out.

#include <cstdint>
#include <string>

namespace stepsim::workload {

struct ModelSpec {
  std::string name = "tiny";
  int layers = 2;
  int hidden = 256;   ///< h
  int heads = 4;      ///< attention heads
  int kv_heads = 0;   ///< key/value heads (grouped-query attention); 0: as many as heads
  int ffn = 1024;     ///< feed-forward inner size
  int vocab = 1000;   ///< V
  int seq_len = 128;  ///< s, tokens per sequence
  std::string activation = "gelu";  ///< gelu (two FFN matrices) or swiglu (three)
  std::string precision = "bf16";   ///< bf16 or fp8 (GEMMs at the GPU's FP8 peak)
  bool tied_embeddings = false;     ///< the output layer reuses the input embedding
  // Mixture of experts: `experts` FFNs per layer, each token routed to `top_k` of them.
  int experts = 0;  ///< 0: dense
  int top_k = 1;
  double capacity_factor = 1.0;  ///< tokens an expert takes, relative to an even split

  [[nodiscard]] int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  [[nodiscard]] std::int64_t head_dim() const { return hidden / heads; }
  /// Q, K, V and output projections: 2 h^2 + 2 h (kv x head_dim).
  [[nodiscard]] std::int64_t attention_params() const;
  /// One FFN (one expert): 2 h ffn (GELU) or 3 h ffn (SwiGLU).
  [[nodiscard]] std::int64_t ffn_params() const;
  /// One layer, every expert counted.
  [[nodiscard]] std::int64_t layer_params() const;
  /// One layer as one token uses it: attention, top_k experts and the router.
  [[nodiscard]] std::int64_t layer_active_params() const;
  /// Input embedding plus the output layer (once if tied).
  [[nodiscard]] std::int64_t embedding_params() const;
  [[nodiscard]] std::int64_t total_params() const;
  /// Model FLOPs of one token, forward and backward, without recomputation:
  /// 6 (L x active layer params + h V) + 12 L h s. For a GPT (ffn = 4h, one KV head per head)
  /// this is Megatron-LM's 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) per token.
  [[nodiscard]] double model_flops_per_token() const;
  /// PaLM's definition (used by Llama 3): 6 N + 12 L H Q T, N the non-embedding parameters
  /// (active ones for MoE).
  [[nodiscard]] double palm_flops_per_token() const;
};

/// Megatron-LM's FLOPs per iteration of `batch` sequences (Narayanan et al., SC'21, eq. 3):
/// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recomputation, or the model FLOPs
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) without (Korthikanti et al. 2022).
double megatron_flops(const ModelSpec& m, std::int64_t batch, bool recompute);

/// Model FLOPs utilization: FLOPs per second per GPU over the peak.
double mfu(double flops_per_step, double step_seconds, std::int64_t gpus, double peak_flops);

}  // namespace stepsim::workload
