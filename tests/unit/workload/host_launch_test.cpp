// The host's kernel launches (src/workload/host_launch.hpp) against counts written out by hand
// from Transformer Engine's and Megatron-Core's code, and the launch-bound layer pass:
// max(the GPU's time, the launches' host time).
#include "src/workload/host_launch.hpp"

#include <gtest/gtest.h>

#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {
namespace {

// Qwen3-30B-A3B's MoE layer on one GPU of an EP16 group (8 local experts), one 4,096-token
// micro-batch of 64 per step, on an H100-like GPU.
Scenario hl_qwen_moe(const char* precision) {
  Scenario s;
  s.model.layers = 48;
  s.model.hidden = 2048;
  s.model.heads = 32;
  s.model.kv_heads = 4;
  s.model.attn_head_dim = 128;
  s.model.ffn = 768;
  s.model.vocab = 151936;
  s.model.seq_len = 4096;
  s.model.activation = "swiglu";
  s.model.experts = 128;
  s.model.top_k = 8;
  s.model.precision = precision;
  s.par.ep = 16;
  s.par.dp = 16;
  s.par.micro_batch = 1;
  s.par.global_batch = 1024;
  s.gpu.bf16_flops = 989e12;
  s.gpu.fp8_flops = 1979e12;
  s.gpu.hbm_bandwidth = 3.35e12;
  s.gpu.gemm_efficiency = 0.68;
  s.gpu.fp8_gemm_efficiency = 0.57;
  s.gpu.sms = 132;
  return s;
}

TEST(HostLaunch, QuantizeKernelsPerRecipe) {
  // Current scaling: zero the amax, reduce it, compute the scale, cast-transpose.
  EXPECT_EQ(quantize_kernels(hl_qwen_moe("fp8")), 4);
  EXPECT_EQ(quantize_kernels(hl_qwen_moe("mxfp8")), 1);
  EXPECT_EQ(quantize_kernels(hl_qwen_moe("bf16")), 0);
}

TEST(HostLaunch, GroupedLinearLaunchesPerExpert) {
  // 8 experts: one GEMM each forward, two backward (input and weight gradients); in FP8 each
  // expert's input (forward) and output gradient (backward) quantized, the weights once in
  // the step's 64 micro-batches.
  const HostKernels b = linear_kernels(hl_qwen_moe("bf16"), 8);
  EXPECT_DOUBLE_EQ(b.fwd, 8);
  EXPECT_DOUBLE_EQ(b.bwd, 16);
  const HostKernels f = linear_kernels(hl_qwen_moe("fp8"), 8);
  EXPECT_DOUBLE_EQ(f.fwd, 8 * (1 + 4 + 4.0 / 64));
  EXPECT_DOUBLE_EQ(f.bwd, 8 * (2 + 4));
  // A linear outside FP8 (the router) is not quantized.
  EXPECT_DOUBLE_EQ(linear_kernels(hl_qwen_moe("fp8"), 1, false).fwd, 1);
}

TEST(HostLaunch, TheLayerPassTakesTheHostsTimeWhenLaunchBound) {
  // With a host far slower than the GPU the pass takes exactly its launches: the layer's other
  // kernels (a third forward), the attention core, the router, QKV and projection, and the two
  // grouped linears of 8 experts.
  Scenario s = hl_qwen_moe("fp8");
  s.compute.host_launch = SimTime::ms(1);
  const double q = 4, w = 4.0 / 64;
  const double fwd = 90.0 / 3 + 1 + 1 + 2 * (1 + q + w) + 16 * (1 + q + w);
  const double bwd = 2 * 90.0 / 3 + 1 + 2 + 2 * (2 + q) + 16 * (2 + q);
  const LayerCosts c = layer_costs(s);
  EXPECT_NEAR(c.fwd_s, fwd * 1e-3, 1e-9);
  EXPECT_NEAR(c.bwd_s, bwd * 1e-3, 1e-9);
  // BF16 launches fewer: no casts.
  Scenario b = hl_qwen_moe("bf16");
  b.compute.host_launch = SimTime::ms(1);
  EXPECT_NEAR(layer_costs(b).fwd_s, (90.0 / 3 + 1 + 1 + 2 + 16) * 1e-3, 1e-9);
}

TEST(HostLaunch, NeverBelowTheGpuAndUnchangedWhenTheHostKeepsAhead) {
  // max(GPU, host): a slow host only ever adds; at 20 us per kernel BF16's pass stays the
  // GPU's, FP8's forward (123 kernels against 50, its GEMMs twice as fast) becomes the host's.
  for (const char* p : {"bf16", "fp8"}) {
    Scenario s = hl_qwen_moe(p);
    const LayerCosts gpu = layer_costs(s);
    s.compute.host_launch = SimTime::us(20);
    const LayerCosts both = layer_costs(s);
    EXPECT_GE(both.fwd_s, gpu.fwd_s);
    EXPECT_GE(both.bwd_s, gpu.bwd_s);
    EXPECT_EQ(both.wgrad_s, gpu.wgrad_s);
    if (std::string(p) == "bf16") {
      EXPECT_EQ(both.fwd_s, gpu.fwd_s);
      EXPECT_EQ(both.bwd_s, gpu.bwd_s);
    } else {
      EXPECT_GT(both.fwd_s, gpu.fwd_s);
    }
  }
}

}  // namespace
}  // namespace stepsim::workload
