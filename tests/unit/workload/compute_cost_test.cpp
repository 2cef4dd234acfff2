// The compute model against its formulas, written out by hand here. The first tests take the
// flat model (compute.gemm_model flat, compute.attention formula): GEMM FLOPs
// 2 T (attention + FFN params) / tp and attention 4 T s h / tp at the efficiency-scaled peaks,
// elementwise bytes at the HBM rate, the launch overhead; backward twice; recomputation; the
// output layer; the parameters a GPU holds and the optimizer's HBM-bound update.
#include "stepsim/workload/compute_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace stepsim::workload {
namespace {

// A GPT layer with round numbers and a GPU whose peaks are easy to divide by.
Scenario gpt() {
  Scenario s;
  s.model.layers = 8;
  s.model.hidden = 1024;
  s.model.heads = 16;
  s.model.ffn = 4096;
  s.model.vocab = 32000;
  s.model.seq_len = 2048;
  s.par.tp = 2;
  s.par.pp = 2;
  s.par.dp = 4;
  s.par.micro_batch = 2;
  s.par.sequence_parallel = false;
  s.gpu.bf16_flops = 1e15;
  s.gpu.fp8_flops = 2e15;
  s.gpu.hbm_bandwidth = 3e12;
  s.gpu.gemm_efficiency = 0.5;
  s.gpu.fp8_gemm_efficiency = 0.4;
  s.compute.memory_efficiency = 0.75;
  s.compute.elementwise_bytes = 24;
  s.compute.kernel_overhead = SimTime::us(5);
  s.compute.gemm_model = "flat";
  s.compute.attention = "formula";
  return s;
}

TEST(ComputeCost, LayerCostsFollowTheRoofline) {
  const Scenario s = gpt();
  const double T = 2.0 * 2048, h = 1024, tp = 2;
  const double params = 4 * h * h + 2 * h * 4096;  // attention (no GQA) and a GELU FFN
  const double gemm = 2 * T * params / tp / (1e15 * 0.5);
  const double attn = 4 * T * 2048 * h / tp / (1e15 * 0.5);
  // Norms, residual adds and dropout: 24 bytes per hidden unit (no sequence parallelism: not
  // split); the GELU reads and writes its TP shard of the FFN (4 bytes per unit).
  const double elem = (24 * h + 4 * 4096 / tp) * T / (3e12 * 0.75);
  const double ovh = 5e-6;
  const LayerCosts c = layer_costs(s);
  EXPECT_NEAR(c.fwd_s, gemm + attn + elem + ovh, 1e-12 * c.fwd_s);
  EXPECT_NEAR(c.bwd_s, 2 * (gemm + attn + elem) + ovh, 1e-12 * c.bwd_s);
  EXPECT_EQ(c.recompute_s, 0.0);
  // The output layer's GEMMs and the cross entropy over the TP shard's T x V / tp logits: 14
  // bytes each forward (BF16 read, FP32 softmax written and read twice), 6 backward.
  const double logits = 2 * T * h * 32000 / tp / (1e15 * 0.5);
  const double ce = T * 32000 / tp / (3e12 * 0.75);
  EXPECT_NEAR(c.logits_fwd_s, logits + 14 * ce + ovh, 1e-12 * c.logits_fwd_s);
  EXPECT_NEAR(c.logits_bwd_s, 2 * logits + 6 * ce + ovh, 1e-12 * c.logits_bwd_s);
}

TEST(ComputeCost, TheFfnActivationCostsItsWidthsTraffic) {
  // SwiGLU reads the gate and the up projection and writes their product: 6 bytes per FFN unit
  // of the TP shard and token, against GELU's 4; the GEMMs' difference (a third matrix) apart.
  Scenario s = gpt();
  const double T = 2.0 * 2048, tp = 2, hbm = 3e12 * 0.75;
  const double gelu = layer_costs(s).fwd_s;
  s.model.activation = "swiglu";
  const double gate = 2 * T * 1024 * 4096 / tp / (1e15 * 0.5);  // the gate projection's GEMM
  EXPECT_NEAR(layer_costs(s).fwd_s - gelu, gate + (6 - 4) * 4096 / tp * T / hbm, 1e-12 * gelu);
  // Sequence parallelism does not split it (the FFN is split over TP already).
  s.par.sequence_parallel = true;
  const double sp = layer_costs(s).fwd_s;
  s.model.ffn = 8192;
  EXPECT_GT(layer_costs(s).fwd_s - sp, 6 * 4096 / tp * T / hbm);
}

TEST(ComputeCost, SequenceParallelismSplitsTheElementwiseTraffic) {
  Scenario s = gpt();
  const LayerCosts plain = layer_costs(s);
  s.par.sequence_parallel = true;
  const LayerCosts sp = layer_costs(s);
  const double elem = 24 * 2.0 * 2048 * 1024 / (3e12 * 0.75);
  EXPECT_NEAR(plain.fwd_s - sp.fwd_s, elem / 2, 1e-15);
}

TEST(ComputeCost, RecomputationAndFp8) {
  Scenario s = gpt();
  s.par.recompute = "full";
  EXPECT_DOUBLE_EQ(layer_costs(s).recompute_s, layer_costs(s).fwd_s);
  s.par.recompute = "selective";
  EXPECT_DOUBLE_EQ(layer_costs(s).recompute_s, 4 * 4096.0 * 2048 * 1024 / 2 / (1e15 * 0.5));
  s.par.recompute = "none";
  // FP8: the GEMMs at the FP8 peak x its efficiency; attention stays at BF16.
  const LayerCosts bf16 = layer_costs(s);
  s.model.precision = "fp8";
  const LayerCosts fp8 = layer_costs(s);
  const double gemm_flops = 2 * 4096.0 * (4.0 * 1024 * 1024 + 2.0 * 1024 * 4096) / 2;
  // Current scaling's casts (amax and cast-transpose, 6 bytes per element) of each linear's
  // input (QKV, projection, FC1, FC2: T x (h + h / tp + h + ffn / tp)) and, once per step (one
  // micro-batch here), of its weights.
  const double cast_bytes = 6 * (4096.0 * (1024 + 512 + 1024 + 2048) + 1536.0 * 1024 +
                                 1024.0 * 512 + 2048.0 * 1024 + 1024.0 * 2048);
  EXPECT_NEAR(bf16.fwd_s - fp8.fwd_s,
              gemm_flops / 0.5e15 - gemm_flops / 0.8e15 - cast_bytes / (3e12 * 0.75), 1e-15);
  // An explicit compute.gemm_efficiency overrides the GPU's for both precisions.
  s.compute.gemm_efficiency = 0.8;
  s.model.precision = "bf16";
  EXPECT_LT(layer_costs(s).fwd_s, bf16.fwd_s);
}

TEST(ComputeCost, MixtureOfExpertsCountsTheRoutedExperts) {
  Scenario s = gpt();
  s.model.experts = 8;
  s.model.top_k = 2;
  s.model.capacity_factor = 1.25;
  s.par.ep = 4;
  s.gpu.moe_elementwise_bytes = 10;
  const double h = 1024, T = 4096;
  const double ffn = 2 * h * 4096 * 2 * 1.25 + h * 8;  // top-k experts and the router
  const double gemm = 2 * T * (4 * h * h + ffn) / 2 / 0.5e15;
  const double attn = 4 * T * 2048 * h / 2 / 0.5e15;
  // The dense elementwise work, and the routed pairs' (T x top_k x capacity factor, each h).
  const double elem = 24 * T * h / (3e12 * 0.75) + 10 * T * 2 * 1.25 * h / (3e12 * 0.75);
  EXPECT_NEAR(layer_costs(s).fwd_s, gemm + attn + elem + 5e-6, 1e-12 * (gemm + attn));
  // Parameters: attention and router dense, the experts split over EP and TP.
  const LayerParams p = layer_params(s);
  EXPECT_DOUBLE_EQ(p.dense, 4 * h * h / 2 + h * 8);
  EXPECT_DOUBLE_EQ(p.expert, 8.0 / 4 * (2 * h * 4096) / 2);
}

TEST(ComputeCost, StageParametersAddUpToTheModel) {
  Scenario s = gpt();
  for (const bool tied : {false, true}) {
    s.model.tied_embeddings = tied;
    for (const PipelineShape& shape : {PipelineShape{2, 1, 4}, PipelineShape{2, 2, 4}}) {
      double sum = 0;
      for (int st = 0; st < shape.stages; ++st) sum += stage_params(s, shape, st);
      // Every GPU of a TP group holds 1/tp of its stage.
      EXPECT_DOUBLE_EQ(sum * s.par.tp, static_cast<double>(s.model.total_params()));
    }
  }
  // The embedding sits on the first virtual stage, the output layer on the last.
  const PipelineShape shape{2, 2, 4};
  const double emb = 32000.0 * 1024 / 2;
  EXPECT_EQ(embedding_params(s, shape, 0, 0), emb);
  EXPECT_EQ(embedding_params(s, shape, 1, 1), 0.0);  // tied (the last loop iteration)
  s.model.tied_embeddings = false;
  EXPECT_EQ(embedding_params(s, shape, 1, 1), emb);
  EXPECT_EQ(embedding_params(s, shape, 1, 0), 0.0);
  EXPECT_EQ(embedding_params(s, shape, 0, 1), 0.0);
}

TEST(ComputeCost, MoeFeaturesAddUpToTheModelAndCostWhatTheyCompute) {
  // Dense-then-MoE layers, a shared expert, MLA and one MTP module; TP 1 and EP 1 so that every
  // GPU of a stage holds the whole stage.
  Scenario s = gpt();
  s.par.tp = 1;
  s.model.experts = 4;
  s.model.top_k = 2;
  s.model.shared_experts = 1;
  s.model.dense_layers = 3;
  s.model.dense_ffn = 8192;
  s.model.mtp_layers = 1;
  s.model.attention = "mla";
  s.model.q_lora_rank = 256;
  s.model.kv_lora_rank = 128;
  s.gpu.moe_elementwise_bytes = 0;  // the FLOPs alone below
  for (const PipelineShape& shape : {PipelineShape{2, 1, 4}, PipelineShape{2, 2, 4}}) {
    double sum = 0;
    for (int st = 0; st < shape.stages; ++st) sum += stage_params(s, shape, st);
    EXPECT_DOUBLE_EQ(sum, static_cast<double>(s.model.total_params()));
    // The gradients handed to the buckets are the parameters too.
    double grads = 0;
    for (int st = 0; st < shape.stages; ++st) {
      for (int c = 0; c < shape.chunks; ++c) {
        for (int l = 0; l < layers_in(shape, 8, st, c); ++l) {
          const LayerParams g = layer_gradient_bytes(s, shape, st, c, l);
          grads += g.dense + g.expert;
        }
      }
    }
    EXPECT_DOUBLE_EQ(grads, 2 * sum);  // grad_bytes 2
  }
  // A dense layer (FFN 8192) against an MoE layer (top 2 + 1 shared of 4096, and the router):
  // flat GEMMs, so the FFN's FLOPs decide, and the GELU's traffic on the FFN's width (the
  // dense 8192, the shared expert's 4096; the routed experts' is moe_elementwise_bytes, 0 here).
  const LayerCosts dense = layer_costs(s, false);
  const LayerCosts moe = layer_costs(s, true);
  const double T = 2.0 * 2048, h = 1024, eff = 0.5e15, hbm = 3e12 * 0.75;
  const double ffn_dense = 2 * T * 2 * h * 8192 / eff + 4 * 8192 * T / hbm;
  const double ffn_moe = 2 * T * (3 * 2 * h * 4096 + h * 4) / eff + 4 * 4096 * T / hbm;
  EXPECT_NEAR(moe.fwd_s - dense.fwd_s, ffn_moe - ffn_dense, 1e-12);
  // The MTP module runs on the output layer's pass: a layer, a projection, the logits again.
  Scenario no_mtp = s;
  no_mtp.model.mtp_layers = 0;
  const LayerCosts base = layer_costs(no_mtp, true);
  EXPECT_NEAR(moe.logits_fwd_s - base.logits_fwd_s,
              moe.fwd_s + 2 * T * 2 * h * h / eff + base.logits_fwd_s, 1e-12);
}

TEST(ComputeCost, APassAddsTheOutputLayerAndSelectiveRecomputation) {
  Scenario s = gpt();
  s.par.recompute = "selective";
  const LayerCosts lc = layer_costs(s);
  const PipelineShape shape{2, 2, 4};  // 8 layers: 2 per virtual stage
  using enum PassKind;
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 0, 0, kForward, 1), lc.fwd_s);
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 0, 0, kBackward, 1), lc.bwd_s + lc.recompute_s);
  // The output layer: the last layer of the last virtual stage only.
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 1, 1, kForward, 1), lc.fwd_s + lc.logits_fwd_s);
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 1, 1, kForward, 0), lc.fwd_s);
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 1, 0, kForward, 1), lc.fwd_s);
  EXPECT_EQ(layer_pass_seconds(s, lc, shape, 1, 1, kBackward, 1),
            lc.bwd_s + lc.recompute_s + lc.logits_bwd_s);
  // Full recomputation's forward is not in the pass (it runs first, with its collectives).
  s.par.recompute = "full";
  EXPECT_EQ(layer_pass_seconds(s, layer_costs(s), shape, 0, 0, kBackward, 0), lc.bwd_s);
}

TEST(ComputeCost, GradientBytesCarryTheEmbeddingOnTheFirstLayer) {
  Scenario s = gpt();
  s.par.grad_bytes = 4;
  const PipelineShape shape{2, 1, 4};
  const double layer = (4.0 * 1024 * 1024 + 2.0 * 1024 * 4096) / 2;
  const double emb = 32000.0 * 1024 / 2;
  EXPECT_EQ(layer_gradient_bytes(s, shape, 0, 0, 0).dense, (layer + emb) * 4);
  EXPECT_EQ(layer_gradient_bytes(s, shape, 0, 0, 1).dense, layer * 4);
  EXPECT_EQ(layer_gradient_bytes(s, shape, 1, 0, 0).dense, (layer + emb) * 4);  // untied output
  EXPECT_EQ(layer_gradient_bytes(s, shape, 0, 0, 0).expert, 0.0);
}

TEST(ComputeCost, TheOptimizerReadsAndWritesItsShard) {
  Scenario s = gpt();
  const double params = 1e9;
  s.par.zero = 0;
  EXPECT_DOUBLE_EQ(optimizer_seconds(s, params), params * 36 / (3e12 * 0.75) + 5e-6);
  s.par.zero = 1;  // the distributed optimizer updates 1/dp of them
  EXPECT_DOUBLE_EQ(optimizer_seconds(s, params), params / 4 * 36 / (3e12 * 0.75) + 5e-6);
}

// The shape-dependent model (compute.gemm_model tiles) on an H100.
Scenario h100() {
  Scenario s;
  s.gpu = gpu::gpu_preset("h100").value();
  return s;
}

TEST(GemmModel, BoundedByThePeakAndExactOnWholeWaves) {
  const Scenario s = h100();
  const double eff = s.gpu.gemm_efficiency;
  // Each wave's main loop at the efficiency, then its BF16 outputs stored at the HBM rate: a
  // whole wave reaches eff x k / (k + k0), k0 = eff x peak / (HBM x memory efficiency).
  const double k0 = eff * s.gpu.bf16_flops / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency);
  const double whole = eff * 8192 / (8192 + k0);
  // 12 x 11 tiles of 256 x 128 = 132 tiles: one whole wave on 132 SMs, compute bound (k large).
  EXPECT_NEAR(gemm_achieved(s, 12 * 256, 11 * 128, 8192, false), whole, 1e-12);
  // One row of 256 more: 143 tiles of 256 x 128 need two waves, 286 of 128 x 128 three; the
  // library takes the latter: 13 / 18 of a whole wave's rate.
  EXPECT_NEAR(gemm_achieved(s, 12 * 256 + 256, 11 * 128, 8192, false), whole * 13 / 18, 1e-12);
  for (double m : {512.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
    for (double n = 64; n <= 32768; n += 64) {
      const double a = gemm_achieved(s, m, n, 8192, false);
      EXPECT_LE(a, eff + 1e-12) << m << " " << n;
      EXPECT_GT(a, 0);
    }
  }
}

TEST(GemmModel, FallsWithShortKAsDeepGemmMeasuresOnH800) {
  // DeepGEMM's README (deepseek-ai/DeepGEMM, table of 2025-04-09, H800 SXM5, FP8): M = 4096 rows
  // (M x N x K, TFLOP/s) and the grouped contiguous layout (8 groups of 4096). Their rates
  // against the largest K (7168 x 16384: 1520) fall with K (512: 775, half); the model, its main
  // loop at DeepGEMM's long-K rate (0.79 of the FP8 peak), holds each within 10% through the
  // epilogue's HBM store alone (without it K = 512 comes out 66% fast, K = 2048 30%).
  Scenario s;
  s.gpu = gpu::gpu_preset("h800").value();
  s.gpu.fp8_gemm_efficiency = 0.79;
  struct Row {
    double m, n, k, groups, tflops;
  };
  const Row rows[] = {{4096, 2112, 7168, 1, 1127}, {4096, 24576, 1536, 1, 1212},
                      {4096, 32768, 512, 1, 775},  {4096, 4096, 7168, 1, 1410},
                      {4096, 7168, 2048, 1, 1168}, {4096, 4096, 7168, 8, 1346},
                      {4096, 7168, 2048, 8, 1214}};
  const double ref = gemm_achieved(s, 4096, 7168, 16384, true);
  for (const Row& r : rows) {
    const double model = gemm_achieved(s, r.m, r.n, r.k, true, r.groups) / ref;
    EXPECT_NEAR(model, r.tflops / 1520, 0.10 * r.tflops / 1520) << r.n << " " << r.k;
  }
  // The epilogue takes the same time in BF16 and FP8: a 768-wide expert (K 768) gains less from
  // FP8 than a long-K GEMM does, and both gain less than the peaks' ratio.
  const Scenario h = h100();
  auto gain = [&](double k) {
    return gemm_seconds(h, 4096, 2048, k, false) / gemm_seconds(h, 4096, 2048, k, true);
  };
  EXPECT_LT(gain(768), 0.9 * gain(16384));
  EXPECT_LT(gain(16384), 2 * h.gpu.fp8_gemm_efficiency / h.gpu.gemm_efficiency);
}

TEST(GemmModel, TimeNeverFallsWithTheShardAndSmallShardsAreLessEfficient) {
  const Scenario s = h100();
  // A 4096-token micro-batch through a column-parallel FC1 of a 8192-wide model (ffn 28672):
  // the GEMM time grows with the shard width, never falls.
  double prev = 0;
  for (double n = 16; n <= 28672; n += 16) {
    const double t = gemm_seconds(s, 4096, n, 8192, false);
    EXPECT_GE(t, prev) << n;
    prev = t;
  }
  // Narrower shards (higher TP) reach less of the peak: worst case over a window of widths.
  auto worst = [&](double n0) {
    double w = 1;
    for (double n = n0; n < 2 * n0; n += 16) {
      w = std::min(w, gemm_achieved(s, 2048, n, 4096, false));
    }
    return w;
  };
  EXPECT_LT(worst(256), worst(1024));
  EXPECT_LT(worst(1024), worst(4096));
  EXPECT_LT(worst(4096), worst(16384));
  EXPECT_GT(worst(16384), 0.85 * s.gpu.gemm_efficiency);  // many waves: little is lost
  // A few tokens through a wide weight: bound by reading the weights (HBM), not by the FLOPs.
  const double bytes = 2.0 * (16 * 8192 + 8192 * 32768.0) + 2.0 * 16 * 32768;
  EXPECT_NEAR(gemm_seconds(s, 16, 32768, 8192, false),
              bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency), 1e-15);
  // flat: every GEMM at the efficiency.
  Scenario f = s;
  f.compute.gemm_model = "flat";
  EXPECT_NEAR(gemm_achieved(f, 16, 8192, 8192, false), s.gpu.gemm_efficiency, 1e-12);
}

TEST(AttentionModel, QuadraticInTheSequenceAndHalvedByTheCausalMask) {
  Scenario s = h100();
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.causal = false;
  auto attn = [&](int seq) {
    s.model.seq_len = seq;
    return attention_fwd_seconds(s);
  };
  // Non-causal: (n^2 + n) blocks of 4 b^2 d FLOPs (n = s / 128, one block's fixed cost per row),
  // on an H100 at cuDNN's published rate (below).
  const double rate = 595e12 * (1 + 1.0 / 128);
  EXPECT_NEAR(attn(8192), 32 * (64.0 * 64 + 64) * 4 * 128 * 128 * 128 / rate, 1e-15);
  EXPECT_NEAR(attn(16384) / attn(8192), 4, 0.05);
  EXPECT_NEAR(attn(65536) / attn(32768), 4, 0.01);
  // Short sequences pay the per-block cost: under 4x from 512 to 1024.
  EXPECT_LT(attn(1024) / attn(512), 3.9);
  s.model.causal = true;
  const double causal = attn(32768);
  s.model.causal = false;
  EXPECT_NEAR(causal / attn(32768), 0.5, 0.01);
  // The formula model: 4 T s h / tp at the GEMM efficiency.
  const double eff = s.gpu.bf16_flops * s.gpu.gemm_efficiency;
  s.compute.attention = "formula";
  EXPECT_NEAR(attn(8192), 4.0 * 8192 * 8192 * 4096 / eff, 1e-15);
}

TEST(AttentionModel, HopperRunsAtCudnnsPublishedRate) {
  // cuDNN's fused attention on an H100 SXM5 (FlashAttention-3 paper, arXiv 2407.08608: BF16,
  // head dim 128, 16k tokens, no mask): 595 TFLOP/s forward, 516 backward (2.5x the forward's
  // FLOPs), each within 1%; the GEMM efficiency fitted on M3 would give 670 forward.
  Scenario s = h100();
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.seq_len = 16384;
  s.model.causal = false;
  const double flops = 4.0 * 16384 * 16384 * 128 * 32;
  const LayerCosts c = layer_costs(s);
  EXPECT_NEAR(flops / c.attn_fwd_s / 1e12, 595, 0.01 * 595);
  EXPECT_NEAR(2.5 * flops / c.attn_bwd_s / 1e12, 516, 0.01 * 516);
  // compute.attention_efficiency overrides it; GPUs without a published rate take the GEMM's.
  s.compute.attention_efficiency = s.gpu.gemm_efficiency;
  const double gemm_rate = flops / layer_costs(s).attn_fwd_s;
  s.compute.attention_efficiency = 0;
  s.gpu.name = "b200";
  EXPECT_DOUBLE_EQ(flops / layer_costs(s).attn_fwd_s, gemm_rate);
  EXPECT_GT(gemm_rate, 1.1 * 595e12);
}

TEST(AttentionModel, TheBackwardRunsBelowTheForwardsRate) {
  // FlashAttention-3's figures (arXiv 2407.08608; H100 SXM5, BF16, head dim 128, 16k tokens):
  // 561 TFLOP/s backward, 648 forward (cuDNN 516 and 595, the same ratio within 0.2%), with the
  // backward's FLOPs 2.5 times the forward's: the backward takes 2.5 x 648 / 561 its time.
  Scenario s = h100();
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.seq_len = 16384;
  const LayerCosts c = layer_costs(s);
  EXPECT_NEAR(c.attn_bwd_s / c.attn_fwd_s, 2.5 * 648 / 561, 1e-9);
  EXPECT_NEAR(c.attn_bwd_s / c.attn_fwd_s, 2.5 * 595 / 516, 0.01 * 2.5 * 595 / 516);
  // The formula model keeps the textbook 2x.
  s.compute.attention = "formula";
  const LayerCosts f = layer_costs(s);
  EXPECT_NEAR(f.attn_bwd_s / f.attn_fwd_s, 2, 1e-12);
}

TEST(AttentionModel, CausalContextParallelismWithAndWithoutLoadBalancing) {
  const double n = 1024;  // blocks in the sequence
  for (int cp : {2, 4, 8, 16}) {
    double sum_plain = 0;
    double sum_balanced = 0;
    const double avg = n * (n + 1) / 2 / cp;
    for (int r = 0; r < cp; ++r) {
      sum_plain += cp_attention_blocks(n, cp, r, true, false);
      sum_balanced += cp_attention_blocks(n, cp, r, true, true);
      EXPECT_NEAR(cp_attention_blocks(n, cp, r, true, true), avg, 1e-9 * avg) << cp << " " << r;
      EXPECT_NEAR(cp_attention_blocks(n, cp, r, false, false), n * n / cp, 1e-9);
    }
    EXPECT_NEAR(sum_plain, n * (n + 1) / 2, 1e-6);
    EXPECT_NEAR(sum_balanced, n * (n + 1) / 2, 1e-6);
    // Without balancing the first rank does the least, the last (2c - 1) / c of the average.
    EXPECT_LT(cp_attention_blocks(n, cp, 0, true, false), avg);
    EXPECT_NEAR(cp_attention_blocks(n, cp, cp - 1, true, false) / avg, (2.0 * cp - 1) / cp, 0.01);
  }
  // The layer's attention waits for the slowest rank.
  Scenario s = h100();
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.seq_len = 131072;
  s.par.cp = 8;
  const double balanced = attention_fwd_seconds(s);
  s.par.cp_load_balance = false;
  EXPECT_NEAR(attention_fwd_seconds(s) / balanced, 15.0 / 8, 0.02);
}

TEST(TpOverlap, ThePairTakesTheLongerPlusOneChunkOfTheShorter) {
  EXPECT_EQ(overlapped_seconds(3, 0, 8), 3.0);
  EXPECT_DOUBLE_EQ(overlapped_seconds(8, 4, 4), 8 + 1.0);  // comm-bound: one GEMM chunk after
  EXPECT_DOUBLE_EQ(overlapped_seconds(4, 8, 4), 1 + 8.0);  // GEMM-bound: one comm chunk before
  for (double d : {0.5, 1.0, 2.0, 7.0}) {
    for (double g : {0.5, 1.0, 3.0}) {
      for (int n : {1, 2, 8}) {
        const double t = overlapped_seconds(d, g, n);
        EXPECT_GE(t, std::max(d, g));
        EXPECT_LE(t, d + g + 1e-15);
      }
    }
  }
  // One chunk: no overlap at all.
  EXPECT_DOUBLE_EQ(overlapped_seconds(2, 3, 1), 5.0);
}

TEST(TpOverlap, TheHiddenGemmsLeaveTheComputeStreamAndAddUpToIt) {
  Scenario s = h100();
  s.model.hidden = 8192;
  s.model.heads = 64;
  s.model.ffn = 28672;
  s.model.seq_len = 4096;
  s.model.activation = "swiglu";
  s.par.tp = 8;
  s.par.sequence_parallel = true;
  const LayerCosts plain = layer_costs(s);
  s.par.tp_overlap = true;
  const LayerCosts ov = layer_costs(s);
  double hf = 0;
  double hb = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(ov.fwd_hide[static_cast<std::size_t>(i)], 0);
    hf += ov.fwd_hide[static_cast<std::size_t>(i)];
    hb += ov.bwd_hide[static_cast<std::size_t>(i)];
  }
  EXPECT_NEAR(ov.fwd_s + hf, plain.fwd_s, 1e-12 * plain.fwd_s);
  EXPECT_NEAR(ov.bwd_s + hb, plain.bwd_s, 1e-12 * plain.bwd_s);
  // FC1 (SwiGLU: gate and up) is the largest of the four forward GEMMs.
  EXPECT_GT(ov.fwd_hide[2], ov.fwd_hide[0]);
  EXPECT_EQ(plain.fwd_hide[0], 0.0);
}

}  // namespace
}  // namespace stepsim::workload
