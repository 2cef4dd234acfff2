// The compute roofline against its formula, written out by hand here: GEMM FLOPs
// 2 T (attention + FFN params) / tp and attention 4 T s h / tp at the efficiency-scaled peaks,
// elementwise bytes at the HBM rate, the launch overhead; backward twice; recomputation; the
// output layer; the parameters a GPU holds and the optimizer's HBM-bound update.
#include "stepsim/workload/compute_cost.hpp"

#include <gtest/gtest.h>

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
  return s;
}

TEST(ComputeCost, LayerCostsFollowTheRoofline) {
  const Scenario s = gpt();
  const double T = 2.0 * 2048, h = 1024, tp = 2;
  const double params = 4 * h * h + 2 * h * 4096;  // attention (no GQA) and a GELU FFN
  const double gemm = 2 * T * params / tp / (1e15 * 0.5);
  const double attn = 4 * T * 2048 * h / tp / (1e15 * 0.5);
  const double elem = 24 * T * h / (3e12 * 0.75);  // no sequence parallelism: not split
  const double ovh = 5e-6;
  const LayerCosts c = layer_costs(s);
  EXPECT_DOUBLE_EQ(c.fwd_s, gemm + attn + elem + ovh);
  EXPECT_DOUBLE_EQ(c.bwd_s, 2 * (gemm + attn + elem) + ovh);
  EXPECT_EQ(c.recompute_s, 0.0);
  const double logits = 2 * T * h * 32000 / tp / (1e15 * 0.5);
  EXPECT_DOUBLE_EQ(c.logits_fwd_s, logits + ovh);
  EXPECT_DOUBLE_EQ(c.logits_bwd_s, 2 * logits + ovh);
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
  EXPECT_NEAR(bf16.fwd_s - fp8.fwd_s, gemm_flops / 0.5e15 - gemm_flops / 0.8e15, 1e-15);
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
  const double h = 1024, T = 4096;
  const double ffn = 2 * h * 4096 * 2 * 1.25 + h * 8;  // top-k experts and the router
  const double gemm = 2 * T * (4 * h * h + ffn) / 2 / 0.5e15;
  const double attn = 4 * T * 2048 * h / 2 / 0.5e15;
  const double elem = 24 * T * h / (3e12 * 0.75);
  EXPECT_DOUBLE_EQ(layer_costs(s).fwd_s, gemm + attn + elem + 5e-6);
  // Parameters: attention and router dense, the experts split over EP and TP.
  const LayerParams p = layer_params(s);
  EXPECT_DOUBLE_EQ(p.dense, 4 * h * h / 2 + h * 8);
  EXPECT_DOUBLE_EQ(p.expert, 8.0 / 4 * (2 * h * 4096) / 2);
}

TEST(ComputeCost, StageParametersAddUpToTheModel) {
  Scenario s = gpt();
  for (const bool tied : {false, true}) {
    s.model.tied_embeddings = tied;
    for (const PipelineShape shape : {PipelineShape{2, 1, 4}, PipelineShape{2, 2, 4}}) {
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

}  // namespace
}  // namespace stepsim::workload
