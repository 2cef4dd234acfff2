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
  /// Causal attention (a decoder): FlashAttention skips the key blocks past the query's.
  bool causal = true;
  // Mixture of experts: `experts` FFNs per layer, each token routed to `top_k` of them.
  int experts = 0;  ///< 0: dense
  int top_k = 1;
  double capacity_factor = 1.0;  ///< tokens an expert takes, relative to an even split
  int shared_experts = 0;        ///< MoE layers: experts of size `ffn` every token goes through
  int dense_layers = 0;          ///< MoE: the first layers are dense (DeepSeek-V3: 3)
  int dense_ffn = 0;             ///< their FFN inner size; 0: ffn
  /// Multi-token prediction modules (DeepSeek-V3: 1), on the last stage: each one more layer
  /// (MoE if the model's last is), a 2h x h projection, and the output layer once more.
  int mtp_layers = 0;
  /// mha: multi-head attention (grouped-query with kv_heads); mla: DeepSeek's multi-head latent
  /// attention (Q and KV through low-rank latents; per head a no-position part and a RoPE part).
  std::string attention = "mha";
  int q_lora_rank = 0;     ///< MLA: query latent (0: Q projected directly)
  int kv_lora_rank = 512;  ///< MLA: key/value latent
  int qk_nope_dim = 128;   ///< MLA: per-head query/key dimension without RoPE
  int qk_rope_dim = 64;    ///< MLA: per-head (query) and shared (key) RoPE dimension
  int v_head_dim = 128;    ///< MLA: per-head value dimension
  /// mha: dimensions per head (model.head_dim; 0: hidden / heads). Qwen3: 32 heads of 128 on a
  /// 2,048 hidden, so the attention is wider than the hidden size.
  int attn_head_dim = 0;

  [[nodiscard]] int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  [[nodiscard]] std::int64_t head_dim() const {
    return attn_head_dim > 0 ? attn_head_dim : hidden / heads;
  }
  /// mha: the queries' (and the attention output's) width, heads x head_dim.
  [[nodiscard]] std::int64_t attn_width() const { return std::int64_t{heads} * head_dim(); }
  [[nodiscard]] bool mla() const { return attention == "mla"; }
  /// Per-head dimension of queries and keys, and of values (head_dim, or MLA's).
  [[nodiscard]] std::int64_t qk_dim() const {
    return mla() ? qk_nope_dim + qk_rope_dim : head_dim();
  }
  [[nodiscard]] std::int64_t v_dim() const { return mla() ? v_head_dim : head_dim(); }
  /// Q, K, V and output projections: 2 h (heads x head_dim) + 2 h (kv x head_dim). MLA: h q_lora +
  /// q_lora H (nope + rope) (or h H (nope + rope) without q_lora), h (kv_lora + rope), kv_lora H
  /// (nope + v), H v h.
  [[nodiscard]] std::int64_t attention_params() const;
  /// The part of attention_params every TP rank holds whole: MLA's down projections.
  [[nodiscard]] std::int64_t attention_replicated_params() const;
  /// One FFN (one expert): 2 h ffn (GELU) or 3 h ffn (SwiGLU).
  [[nodiscard]] std::int64_t ffn_params() const;
  /// A dense layer's FFN in an MoE model (dense_ffn; ffn when 0); a dense model's FFN.
  [[nodiscard]] std::int64_t dense_ffn_params() const;
  /// Whether layer `layer` (0-based) is an MoE layer: an MoE model past its dense_layers.
  [[nodiscard]] bool moe_layer(int layer) const { return experts > 0 && layer >= dense_layers; }
  /// One layer, every expert counted: an MoE layer (`moe`: routed experts, shared experts and
  /// the router) or a dense one. A dense model's layers are dense either way.
  [[nodiscard]] std::int64_t layer_params(bool moe = true) const;
  /// One layer as one token uses it: attention, top_k and the shared experts, and the router.
  [[nodiscard]] std::int64_t layer_active_params(bool moe = true) const;
  /// Non-embedding parameters one token uses: every layer's active ones and the MTP modules'.
  [[nodiscard]] double active_params() const;
  /// Input embedding plus the output layer (once if tied).
  [[nodiscard]] std::int64_t embedding_params() const;
  [[nodiscard]] std::int64_t total_params() const;
  /// Model FLOPs of one token, forward and backward, without recomputation:
  /// 6 (L x active layer params + h V) + 12 L h s (each MTP module adds its layer, projection
  /// and output layer). For a GPT (ffn = 4h, one KV head per head)
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
