// The FLOPs and parameter formulas against hand computations and published model sizes.
#include "stepsim/workload/model.hpp"

#include <gtest/gtest.h>

namespace stepsim::workload {
namespace {

ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.ffn = 4 * 12288;
  m.vocab = 51200;
  m.seq_len = 2048;
  return m;
}

ModelSpec llama3_405b() {
  ModelSpec m;
  m.layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kv_heads = 8;
  m.ffn = 53248;
  m.vocab = 128000;
  m.seq_len = 8192;
  m.activation = "swiglu";
  return m;
}

TEST(Model, GptFlopsAreMegatronsModelFlops) {
  // For a GPT (FFN 4h, one KV head per head) 6 (L x 12 h^2 + h V) + 12 L h s per token is
  // exactly 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) / (B s).
  const ModelSpec m = gpt3_175b();
  const std::int64_t B = 1536;
  const double ours = m.model_flops_per_token() * static_cast<double>(B) * m.seq_len;
  EXPECT_NEAR(ours / megatron_flops(m, B, false), 1.0, 1e-12);
  // Full recomputation: Megatron's 96-formula (4 passes where 3 are model FLOPs; its logits
  // term is V/(16 l h), i.e. the output layer is not recomputed).
  const double h = 12288;
  const double by_hand =
      96.0 * B * 2048 * 96 * h * h * (1 + 2048 / (6 * h) + 51200 / (16 * 96 * h));
  EXPECT_NEAR(megatron_flops(m, B, true) / by_hand, 1.0, 1e-12);
}

TEST(Model, ParameterCountsMatchThePublishedSizes) {
  // GPT-3 175B: 96 x 12 h^2 + 2 V h = 175.2e9 (175B in Brown et al.).
  EXPECT_NEAR(static_cast<double>(gpt3_175b().total_params()), 175.2e9, 0.1e9);
  // Llama 3 405B: 405.8e9 with untied embeddings (the paper's 405B).
  const ModelSpec l = llama3_405b();
  EXPECT_EQ(l.attention_params(), 2LL * 16384 * 16384 + 2LL * 16384 * 8 * 128);
  EXPECT_EQ(l.ffn_params(), 3LL * 16384 * 53248);
  EXPECT_NEAR(static_cast<double>(l.total_params()), 405e9, 0.01 * 405e9);
  // Mixtral 8x7B: 46.7e9 parameters, 12.9e9 active per token (Mistral AI, 2024).
  ModelSpec x;
  x.layers = 32;
  x.hidden = 4096;
  x.heads = 32;
  x.kv_heads = 8;
  x.ffn = 14336;
  x.vocab = 32000;
  x.activation = "swiglu";
  x.experts = 8;
  x.top_k = 2;
  EXPECT_NEAR(static_cast<double>(x.total_params()), 46.7e9, 0.01 * 46.7e9);
  const double active = 32.0 * static_cast<double>(x.layer_active_params()) +
                        static_cast<double>(x.embedding_params());
  EXPECT_NEAR(active, 12.9e9, 0.01 * 12.9e9);
}

TEST(Model, PalmFlopsAndMfuArithmetic) {
  // PaLM: 6 N + 12 L H Q T per token, N the non-embedding parameters.
  const ModelSpec l = llama3_405b();
  const double n = 126.0 * static_cast<double>(l.layer_active_params());
  EXPECT_DOUBLE_EQ(l.palm_flops_per_token(), 6 * n + 12.0 * 126 * 128 * 128 * 8192);
  // Megatron on Selene (M1): 163 TFLOP/s per GPU is 52.2% of the A100's 312.
  const double step = 10.0;
  EXPECT_NEAR(mfu(163e12 * 3072 * step, step, 3072, 312e12), 0.5224, 1e-4);
  EXPECT_EQ(mfu(1, 0, 1, 1), 0.0);
}

// DeepSeek-V3 (DeepSeek-AI, arXiv 2412.19437, and its config.json): 61 layers, the first 3 dense
// (FFN 18432), then 256 routed experts (top 8) and 1 shared of FFN 2048; MLA with 128 heads.
ModelSpec deepseek_v3() {
  ModelSpec m;
  m.layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.ffn = 2048;
  m.vocab = 129280;
  m.seq_len = 4096;
  m.activation = "swiglu";
  m.experts = 256;
  m.top_k = 8;
  m.shared_experts = 1;
  m.dense_layers = 3;
  m.dense_ffn = 18432;
  m.attention = "mla";
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_nope_dim = 128;
  m.qk_rope_dim = 64;
  m.v_head_dim = 128;
  return m;
}

TEST(Model, DeepSeekV3CountsItsPublishedParameters) {
  ModelSpec m = deepseek_v3();
  // Published: 671B in total, 37B activated per token (norms left out here).
  EXPECT_NEAR(static_cast<double>(m.total_params()), 671e9, 0.005 * 671e9);
  const double emb = 2.0 * 129280 * 7168;
  EXPECT_NEAR(m.active_params() + emb, 37e9, 0.03 * 37e9);
  // MLA's projections, by hand.
  const double attn =
      7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  EXPECT_EQ(static_cast<double>(m.attention_params()), attn);
  // Dense layers are dense; the others carry the 256 + 1 experts and the router.
  EXPECT_FALSE(m.moe_layer(2));
  EXPECT_TRUE(m.moe_layer(3));
  EXPECT_EQ(m.layer_params(false), m.attention_params() + 3LL * 7168 * 18432);
  EXPECT_EQ(m.layer_params(true), m.attention_params() + 257LL * 3 * 7168 * 2048 + 7168LL * 256);
  // The attention core: 2 s H (qk + v) per token forward, 6 s H (qk + v) with the backward.
  const double core = 6.0 * 61 * 4096 * 128 * (192 + 128);
  EXPECT_NEAR(m.model_flops_per_token(), 6 * (m.active_params() + 7168.0 * 129280) + core,
              1e-9 * core);
  // One MTP module adds a layer, a 2h x h projection and the output layer once more.
  const double without = m.model_flops_per_token();
  m.mtp_layers = 1;
  const double layer = static_cast<double>(m.layer_active_params(true)) + 2.0 * 7168 * 7168;
  EXPECT_NEAR(m.model_flops_per_token() - without, 6 * (layer + 7168.0 * 129280) + core / 61,
              1e-9 * without);
}

}  // namespace
}  // namespace stepsim::workload
