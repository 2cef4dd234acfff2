// The memory model against its sources: ZeRO's model-state bytes (validation R1), Korthikanti
// et al.'s per-layer activations and the savings of selective recomputation (R2), and one test
// per term (what TP, CP, ZeRO, the schedule, recomputation, MoE, MLA, MTP and FSDP do to it).
#include "stepsim/workload/memory_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace stepsim::workload {
namespace {

// GPT-3 175B (Brown et al.): 96 layers, h 12288, 96 heads, s 2048, GELU FFN 4h, V 51200.
Scenario gpt3() {
  Scenario s;
  s.model.layers = 96;
  s.model.hidden = 12288;
  s.model.heads = 96;
  s.model.ffn = 4 * 12288;
  s.model.vocab = 51200;
  s.model.seq_len = 2048;
  s.par.tp = 8;
  s.par.pp = 8;
  s.par.dp = 16;
  s.par.micro_batch = 1;
  s.par.global_batch = 1536;
  s.par.zero = 1;
  s.par.sequence_parallel = true;
  return s;
}

double term(const MemoryReport& r, int stage, const char* name) {
  return r.stages.at(static_cast<std::size_t>(stage)).bytes(name);
}

double states(const MemoryReport& r, int stage) {
  return term(r, stage, "weights") + term(r, stage, "gradients") +
         term(r, stage, "optimizer_states") + term(r, stage, "embeddings");
}

// R1: 7.5B parameters, mixed-precision Adam, 64-way data parallel (ZeRO, sections 5.1-5.3):
// 120 GB plain, 31.4 GB ZeRO-1, 16.6 GB ZeRO-2, 1.9 GB ZeRO-3 per GPU (1%; ZeRO-3's 1.875 GB
// rounds to 1.9).
TEST(MemoryModel, ZeroModelStatesMatchTheZeroPaper) {
  Scenario s = gpt3();
  s.model.layers = 4;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.ffn = 4 * 4096;
  s.par.tp = 1;
  s.par.pp = 1;
  s.par.dp = 64;
  s.par.global_batch = 64;
  s.memory.accounting = "zero";
  const double params = static_cast<double>(s.model.total_params());
  const double published[] = {120e9, 31.4e9, 16.6e9, 1.9e9};
  const double tolerance[] = {0.01, 0.01, 0.01, 0.02};
  for (int zero = 0; zero <= 3; ++zero) {
    s.par.zero = zero;
    const double per_param = states(estimate_memory(s), 0) / params;
    EXPECT_NEAR(per_param * 7.5e9 / published[zero], 1.0, tolerance[zero]) << "ZeRO-" << zero;
  }
  s.par.zero = 2;
  EXPECT_DOUBLE_EQ(states(estimate_memory(s), 0) / params, 2 + 14.0 / 64);
}

// Megatron-LM's accounting: 18 bytes per parameter without the distributed optimizer, 6 + 12/d
// with it.
TEST(MemoryModel, MegatronDistributedOptimizerBytesPerParameter) {
  Scenario s = gpt3();
  s.par.pp = 1;
  s.par.tp = 1;
  s.par.dp = 8;
  s.par.global_batch = 8;
  s.model.layers = 2;
  const double params = static_cast<double>(s.model.total_params());
  s.par.zero = 0;
  EXPECT_DOUBLE_EQ(states(estimate_memory(s), 0) / params, 18);
  s.par.zero = 1;
  EXPECT_DOUBLE_EQ(states(estimate_memory(s), 0) / params, 6 + 12.0 / 8);
}

// R2: the 5as/h term is 80 for GPT-3 175B and 64 for MT-NLG 530B; selective recomputation
// (34 sbh/t) saves 70% and 65% of TP 8 + SP's sbh(34/t + 5as/(ht)) (Korthikanti et al., Table 2
// and section 5).
TEST(MemoryModel, KorthikantiTableTwoAndSelectiveSavings) {
  Scenario s = gpt3();
  s.compute.attention = "formula";  // the scores stored, as in the paper
  Scenario mt = s;                  // MT-NLG 530B: h 20480, 128 heads
  mt.model.hidden = 20480;
  mt.model.heads = 128;
  mt.model.ffn = 4 * 20480;
  const double published[] = {0.70, 0.65};
  const double five_as_h[] = {80, 64};
  int i = 0;
  for (const Scenario& x : {s, mt}) {
    const double sbh = 2048.0 * 1 * x.model.hidden;
    const double t = 8;
    const double none = layer_activation_bytes(x, false, "none");
    const double sel = layer_activation_bytes(x, false, "selective");
    EXPECT_DOUBLE_EQ(none, sbh * (34 / t + five_as_h[i] / t));
    EXPECT_DOUBLE_EQ(sel, 34 * sbh / t);
    EXPECT_NEAR(1 - sel / none, published[i], 0.01);
    ++i;
  }
  // Tensor parallel without sequence parallelism: sbh (10 + 24/t + 5as/(ht)).
  s.par.sequence_parallel = false;
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "none"), sbh * (10 + 24.0 / 8 + 80.0 / 8));
  // No parallelism: sbh (34 + 5as/h).
  s.par.tp = 1;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "none"), sbh * (34 + 80));
  // Full recomputation: the layer's input, 2 sbh.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "full"), 2 * sbh);
}

// FlashAttention keeps no s^2 scores: only the fp32 log-sum-exp per row and head.
TEST(MemoryModel, FlashAttentionStoresNoScores) {
  Scenario s = gpt3();
  s.compute.attention = "flash";
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "none"), 34 * sbh / 8 + 4.0 * 2048 * 96 / 8);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "selective"),
                   layer_activation_bytes(s, false, "none"));
}

// Doubling TP halves every TP-sharded term (with sequence parallelism, all activations).
TEST(MemoryModel, DoublingTpHalvesTheShardedTerms) {
  Scenario a = gpt3();
  Scenario b = a;
  b.par.tp = 16;
  b.par.dp = 8;
  b.par.cp = 2;           // the same data-parallel sharding group (dp x cp)
  b.par.micro_batch = 2;  // the same tokens per CP rank
  const MemoryReport ra = estimate_memory(a);
  const MemoryReport rb = estimate_memory(b);
  for (const char* name : {"weights", "gradients", "optimizer_states", "activations"}) {
    EXPECT_DOUBLE_EQ(term(rb, 0, name), term(ra, 0, name) / 2) << name;
  }
  for (const char* name : {"embeddings", "logits", "output_activations"}) {
    EXPECT_DOUBLE_EQ(term(rb, 7, name), term(ra, 7, name) / 2) << name;
  }
}

// 1F1B: stage i holds p - i micro-batches at its first backward; stage 0 holds p.
TEST(MemoryModel, OneFOneBFirstStageHoldsPMicroBatches) {
  const Scenario s = gpt3();
  const MemoryReport r = estimate_memory(s);
  const double layer = layer_activation_bytes(s, false, "none");
  for (int i = 0; i < 8; ++i) {
    EXPECT_DOUBLE_EQ(term(r, i, "activations"), (8 - i) * 12 * layer) << "stage " << i;
  }
  EXPECT_EQ(r.peak_stage, 0);
  // Fewer micro-batches than stages: at most every micro-batch.
  Scenario few = s;
  few.par.global_batch = 16 * 3;
  EXPECT_DOUBLE_EQ(term(estimate_memory(few), 0, "activations"), 3 * 12 * layer);
}

// Interleaving with m chunks: the first stage holds (L/p) p (1 + (p - 1)/(p m)) layers' worth.
TEST(MemoryModel, InterleavingMultipliesByOnePlusPMinusOneOverPM) {
  Scenario s = gpt3();
  s.par.vpp = 3;
  const double layer = layer_activation_bytes(s, false, "none");
  const double p = 8;
  const double m = 3;
  EXPECT_NEAR(term(estimate_memory(s), 0, "activations"),
              (96 / p) * p * (1 + (p - 1) / (p * m)) * layer, 1e-6 * layer);
}

// Full recomputation stores 2sbh/t per layer (sequence parallel) and rebuilds one layer whole in
// the backward; selective with the scores stored rebuilds one layer's scores.
TEST(MemoryModel, RecomputationStoresInputsAndRebuildsOneLayer) {
  Scenario s = gpt3();
  s.compute.attention = "formula";
  s.par.recompute = "full";
  const MemoryReport r = estimate_memory(s);
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(term(r, 0, "activations"), 8 * 12 * 2 * sbh / 8);
  EXPECT_DOUBLE_EQ(term(r, 0, "recompute_working"), layer_activation_bytes(s, false, "none"));
  s.par.recompute = "selective";
  EXPECT_DOUBLE_EQ(term(estimate_memory(s), 0, "recompute_working"), 80 * sbh / 8);
}

// Context parallelism splits the sequence: a CP rank holds half the tokens' activations.
TEST(MemoryModel, ContextParallelHalvesActivations) {
  Scenario a = gpt3();
  Scenario b = a;
  b.par.cp = 2;
  b.par.dp = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(b, false, "none"),
                   layer_activation_bytes(a, false, "none") / 2);
}

// The input embedding on the first stage, the output layer and the fp32 logits (4 s b V / t)
// on the last; an MTP module adds its layer and a second output layer's logits.
TEST(MemoryModel, EmbeddingsOutputLayerAndLogitsOnTheirStages) {
  Scenario s = gpt3();
  MemoryReport r = estimate_memory(s);
  const double emb = 51200.0 * 12288 / 8;
  const double b = 2 + 4 + 12.0 / 16;  // megatron, distributed optimizer over 16
  EXPECT_DOUBLE_EQ(term(r, 0, "embeddings"), emb * b);
  EXPECT_DOUBLE_EQ(term(r, 7, "embeddings"), emb * b);
  EXPECT_DOUBLE_EQ(term(r, 3, "embeddings"), 0);
  EXPECT_DOUBLE_EQ(term(r, 7, "logits"), 4.0 * 2048 * 51200 / 8);
  EXPECT_DOUBLE_EQ(term(r, 0, "logits"), 0);
  s.model.mtp_layers = 1;
  r = estimate_memory(s);
  EXPECT_DOUBLE_EQ(term(r, 7, "logits"), 2 * 4.0 * 2048 * 51200 / 8);
  EXPECT_GT(term(r, 7, "mtp_activations"), layer_activation_bytes(s, false, "none"));
  EXPECT_DOUBLE_EQ(term(r, 6, "mtp_activations"), 0);
}

// MoE: routed experts divided by EP x expert-TP, their optimizer states over the expert
// data-parallel group (dp cp / ep); shared experts and the router with the dense terms.
TEST(MemoryModel, MoeExpertsShardOverEpAndExpertDataParallel) {
  Scenario s = gpt3();
  s.model.layers = 8;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.ffn = 2048;
  s.model.activation = "swiglu";
  s.model.experts = 64;
  s.model.top_k = 8;
  s.par.pp = 1;
  s.par.tp = 2;
  s.par.dp = 32;
  s.par.ep = 8;
  s.par.global_batch = 64;
  const MemoryReport r = estimate_memory(s);
  const double expert_params = 8.0 * 64 / 8 * (3.0 * 4096 * 2048) / 2;
  EXPECT_DOUBLE_EQ(term(r, 0, "expert_weights"), 2 * expert_params);
  EXPECT_DOUBLE_EQ(term(r, 0, "expert_gradients"), 4 * expert_params);
  EXPECT_DOUBLE_EQ(term(r, 0, "expert_optimizer_states"), 12 * expert_params / (32.0 / 8));
  // Token copies routed to an EP rank: top_k x capacity x tokens, all-to-all in and out.
  EXPECT_DOUBLE_EQ(term(r, 0, "moe_dispatch_buffers"), 2 * 2 * 2048.0 * 8 * 4096);
  Scenario dense = s;
  dense.model.experts = 0;
  EXPECT_DOUBLE_EQ(term(estimate_memory(dense), 0, "moe_dispatch_buffers"), 0);
  // Doubling EP halves the routed experts.
  s.par.ep = 16;
  EXPECT_DOUBLE_EQ(term(estimate_memory(s), 0, "expert_weights"), 2 * expert_params / 2);
}

// MLA's latents (and their norms) are whole on every TP rank: they do not shrink with TP.
TEST(MemoryModel, MlaLatentsAreNotTpSharded) {
  Scenario s = gpt3();
  s.model.attention = "mla";
  s.model.q_lora_rank = 1536;
  s.model.kv_lora_rank = 512;
  Scenario mha = s;
  mha.model.attention = "mha";
  const double T = 2048;
  const double latents = 2 * T * (2.0 * 1536 + 2.0 * 512 + 64);
  // MLA's Q/K/V widths differ from MHA's; remove them and the latents stay.
  const double qkv_mla = 2 * T * (96.0 * 192 + 96.0 * 192 + 96.0 * 128) / 8 + 2 * T * 96 * 128 / 8;
  const double qkv_mha = 2 * T * 3.0 * 12288 / 8 + 2 * T * 12288 / 8.0;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "none") - qkv_mla,
                   layer_activation_bytes(mha, false, "none") - qkv_mha + latents);
}

// ZeRO-3 / FSDP: every state sharded, plus the gathered layers in flight (the computing one and
// fsdp_prefetch more) and one layer's unsharded gradients.
TEST(MemoryModel, FsdpHoldsItsGatheredLayers) {
  Scenario s = gpt3();
  s.par.zero = 3;
  s.par.pp = 1;
  s.par.tp = 1;
  s.par.dp = 64;
  s.par.global_batch = 64;
  s.memory.fsdp_prefetch = 1;
  const MemoryReport r = estimate_memory(s);
  const double layer = static_cast<double>(s.model.layer_params());
  const double emb = 2.0 * 51200 * 12288;
  EXPECT_DOUBLE_EQ(term(r, 0, "fsdp_unsharded"), layer * (2 * 2 + 4) + emb * 2);
  EXPECT_DOUBLE_EQ(term(r, 0, "weights"), 96 * layer * 2 / 64);
}

// NCCL: 4 MiB per channel and ring peer (two) for every communicator of more than one GPU.
TEST(MemoryModel, NcclBuffersByChannelsAndCommunicators) {
  Scenario s = gpt3();  // TP, DP rings and the pipeline's two neighbours
  s.memory.nccl_channels = 16;
  const double buf = 4 << 20;
  const double expect = 2 * 16 * 2 * buf + 2 * 2 * buf;  // p2p channels per peer: auto is 2
  EXPECT_DOUBLE_EQ(term(estimate_memory(s), 0, "nccl_buffers"), expect);
  s.par.tp = 1;
  s.par.dp = 128;
  EXPECT_DOUBLE_EQ(term(estimate_memory(s), 0, "nccl_buffers"), expect - 16 * 2 * buf);
}

// The example: GPT-3 175B TP1 PP1 on 1,024 H100 80 GB does not fit (the fp32 master
// weights alone are 2.1 TB / 1024 = 2 GB, but bf16 weights and gradients are 1 TB per GPU);
// Megatron's 175B layout (TP8 PP8, ZeRO-1, selective, h100) does.
TEST(MemoryModel, GptThreeOnOneGpuPerReplicaDoesNotFit) {
  Scenario s = gpt3();
  s.par.tp = 1;
  s.par.pp = 1;
  s.par.dp = 1024;
  s.par.zero = 0;
  s.par.global_batch = 2048;
  MemoryReport r = estimate_memory(s);
  EXPECT_FALSE(r.fits());
  EXPECT_GT(r.peak(), 175e9 * 18);
  const std::string msg = memory_error(r, "");
  EXPECT_NE(msg.find("stage 0"), std::string::npos);
  EXPECT_NE(msg.find("optimizer_states"), std::string::npos);
  s = gpt3();
  s.par.recompute = "selective";
  r = estimate_memory(s);
  EXPECT_TRUE(r.fits()) << r.peak() / 1e9 << " GB";
}

// R3: Llama 3.1 8B under torchtitan's FSDP (ZeRO-3) on H100 96 GB, local batch 2, sequence
// 8192 (llama3_8b.toml at the benchmark's commit), op-level selective checkpointing, bf16
// compute, fp32 states (16 bytes per parameter, all sharded), PyTorch's cross entropy on fp32
// logits (3 copies), no dropout: peak 82.4 GiB on 8 GPUs, 67.0 GiB on 128 (torchtitan
// benchmarks, tables 1 and 3; allocator included). A prediction, 10%: nothing is fitted.
TEST(MemoryModel, TorchtitanLlama8bFsdpPeakWithinTenPercent) {
  Scenario s;
  s.model.layers = 32;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.kv_heads = 8;
  s.model.ffn = 14336;
  s.model.vocab = 128256;
  s.model.seq_len = 8192;
  s.model.activation = "swiglu";
  s.par.tp = 1;
  s.par.pp = 1;
  s.par.micro_batch = 2;
  s.par.zero = 3;
  s.par.recompute = "selective";
  s.memory.selective = "op";
  s.memory.logits_copies = 3;
  s.memory.dropout = false;
  s.memory.accounting = "zero";
  s.gpu.hbm_bytes = std::int64_t{96} << 30;
  const double gib = 1 << 30;
  const int gpus[] = {8, 128};
  const double published[] = {82.4, 67.0};
  for (int i = 0; i < 2; ++i) {
    s.par.dp = gpus[i];
    s.par.global_batch = 2 * gpus[i];
    const MemoryReport r = estimate_memory(s);
    EXPECT_NEAR(r.peak() / gib / published[i], 1.0, 0.10)
        << gpus[i] << " GPUs: " << r.peak() / gib << " GiB";
    EXPECT_TRUE(r.fits());
  }
}

// torchtitan's op policy keeps the layer input, the attention output and matmuls 1, 3, 5, 7
// (Q, V, W1, W2) of a SwiGLU layer.
TEST(MemoryModel, OpLevelSelectiveKeepsEveryOtherMatmul) {
  Scenario s;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.kv_heads = 8;
  s.model.ffn = 14336;
  s.model.seq_len = 8192;
  s.model.activation = "swiglu";
  s.memory.selective = "op";
  const double T = 8192;
  const double h = 4096;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(s, false, "selective"),
                   2 * T * h + 2 * T * h + 4 * T * 32 +  // input, attention out
                       2 * T * h + 2 * T * 1024 + 2 * T * 14336 + 2 * T * h);  // Q, V, W1, W2
}

}  // namespace
}  // namespace stepsim::workload
