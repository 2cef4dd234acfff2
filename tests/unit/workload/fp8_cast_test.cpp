// FP8 current scaling's casts (src/workload/fp8_cast.hpp) against their byte count written out
// by hand: amax (read 2 bytes) and cast-transpose (read 2, write 1 + 1) of each BF16 input.
#include "src/workload/fp8_cast.hpp"

#include <gtest/gtest.h>

#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {
namespace {

Scenario fp8_model() {
  Scenario s;
  s.model.precision = "fp8";
  s.par.micro_batch = 1;
  s.par.dp = 16;
  s.par.global_batch = 1024;  // 64 micro-batches per step
  s.gpu.hbm_bandwidth = 3e12;
  s.compute.memory_efficiency = 0.75;
  return s;
}

TEST(Fp8Cast, BytesOfAKnownGemmShape) {
  // Qwen3-30B-A3B's FC1 on one EP16 rank: 8 experts of 2 x 768 outputs over a 2,048 hidden,
  // 2,048 tokens each.
  const Scenario s = fp8_model();
  const double m = 2048, n = 1536, k = 2048, g = 8;
  const Fp8CastBytes c = fp8_cast_bytes(s, m, n, k, g);
  EXPECT_DOUBLE_EQ(c.fwd, g * (6 * m * k + 6 * k * n / 64));
  EXPECT_DOUBLE_EQ(c.bwd, g * 6 * m * n);
}

TEST(Fp8Cast, ActivationTrafficScalesWithTokensWeightsDoNot) {
  const Scenario s = fp8_model();
  const Fp8CastBytes one = fp8_cast_bytes(s, 4096, 1536, 2048);
  const Fp8CastBytes two = fp8_cast_bytes(s, 8192, 1536, 2048);
  EXPECT_DOUBLE_EQ(two.bwd, 2 * one.bwd);
  const double w = 6.0 * 1536 * 2048 / 64;  // the weights' share, once per step
  EXPECT_DOUBLE_EQ(two.fwd - w, 2 * (one.fwd - w));
}

TEST(Fp8Cast, SmallGemmsPayALargerShareThanLargeOnes) {
  // Relative to the GEMM's own time the casts weigh more when n (and k) are narrow: the
  // bytes go as m (k + n), the FLOPs as m n k.
  Scenario s = fp8_model();
  s.gpu.fp8_flops = 2e15;
  s.gpu.fp8_gemm_efficiency = 0.5;
  s.compute.gemm_model = "flat";
  const double hbm = s.gpu.hbm_bandwidth * s.compute.memory_efficiency;
  auto share = [&](double n, double k) {
    return fp8_cast_bytes(s, 8192, n, k).fwd / hbm / gemm_seconds(s, 8192, n, k, true);
  };
  EXPECT_GT(share(768, 2048), 4 * share(16384, 8192));
}

TEST(Fp8Cast, NothingInBf16OrBlockScaledRecipes) {
  Scenario s = fp8_model();
  for (const char* p : {"bf16", "mxfp8", "nvfp4"}) {
    s.model.precision = p;
    const Fp8CastBytes c = fp8_cast_bytes(s, 4096, 1536, 2048, 8);
    EXPECT_EQ(c.fwd, 0) << p;
    EXPECT_EQ(c.bwd, 0) << p;
  }
}

}  // namespace
}  // namespace stepsim::workload
