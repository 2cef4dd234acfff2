// Published MoE training steps (../shared/validation/moe.md E1, E2) against the step model at
// analytical fidelity, with the scenario files in workloads/validation/ (Qwen3-30B-A3B, EP16 on
// two DGX H100, DeepEP's normal kernels). The GEMM efficiency is H100's (fitted on M3 and M6,
// mfu.md), the dispatch DeepEP's (E3, E4); one number is fitted on E1 without overlap: Hopper's
// MoE memory-bound work per routed token (gpu.moe_elementwise_bytes). E1 with overlap and its
// gain are predictions; E2 (FP8) is one (its host launches, compute.host_launch, and its BF16
// dispatch) and misses by 17%, held where it is so that a change shows (docs/workload.md,
// "Published MoE cases").
#include <gtest/gtest.h>

#include <cstdio>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

StepResult step(const std::string& file, const std::vector<std::string>& sets = {}) {
  const auto s =
      load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/validation/" + file, sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  const auto topo = topology::load_topology(s->topology).value();
  EXPECT_TRUE(validate(*s, topo).ok());
  auto comm = make_analytical_comm(topo, *s);
  return run_step(*s, topo, *comm).value();
}

constexpr const char* kE1 = "e1-qwen3-30b-a3b-ep16-h100.yaml";

TEST(MoeValidation, E1_OverlapHidesEpTimeAndNeverSlows) {
  const StepResult none = step(kE1);
  const StepResult f1b = step(kE1, {"moe.overlap=1f1b"});
  const int ep = static_cast<int>(CommGroup::kEp);
  std::printf(
      "E1: %.2f s without overlap (EP exposed %.2f s), %.2f s with (exposed %.2f, hidden "
      "%.2f)\n",
      none.step_s, none.exposed_s[ep], f1b.step_s, f1b.exposed_s[ep], f1b.ep_hidden_s);
  EXPECT_EQ(none.ep_hidden_s, 0);
  EXPECT_GT(f1b.ep_hidden_s, 0);
  EXPECT_LT(f1b.exposed_s[ep], none.exposed_s[ep]);
  EXPECT_LT(f1b.step_s, none.step_s);
  // What the overlap hides comes out of the exposed EP time (less the compute the held SMs slow).
  EXPECT_NEAR(none.exposed_s[ep] - f1b.exposed_s[ep], f1b.ep_hidden_s, 1e-9);
}

TEST(MoeValidation, E1_WithinTenPercentAndTheOverlapsGain) {
  // Published: 24.71 s without overlap (fitted), 20.99 s with it (predicted), 10% each; the
  // overlap's gain 15% within 5 points.
  const double none = step(kE1).step_s;
  const double f1b = step(kE1, {"moe.overlap=1f1b"}).step_s;
  std::printf("E1 %.2f s / %.2f s (gain %.1f%%)\n", none, f1b, 100 * (1 - f1b / none));
  EXPECT_NEAR(none, 24.71, 0.10 * 24.71);
  EXPECT_NEAR(f1b, 20.99, 0.10 * 20.99);
  EXPECT_NEAR(100 * (1 - f1b / none), 100 * (1 - 20.99 / 24.71), 5.0);
  // Without the memory-bound work the step is 36% fast.
  EXPECT_LT(step(kE1, {"gpu.moe_elementwise_bytes=0"}).step_s, 0.7 * 24.71);
  // NCCL's all-to-all moves each token once per expert across the servers: slower than DeepEP.
  EXPECT_GT(step(kE1, {"moe.dispatcher=alltoall"}).step_s, 1.2 * none);
}

TEST(MoeValidation, E2_Fp8SlowerThanBf16FromItsHostLaunchesAndBf16Dispatch) {
  // Published 8,960 tokens/s/GPU in FP8 (Megatron-Bridge 26.04.01), below the BF16 run's
  // 10,610. The release's FP8 recipe runs without CUDA graphs, and current scaling launches 4
  // kernels per quantized tensor, per expert (Transformer Engine's split_quantize): 123 kernels
  // in a layer's forward against BF16's 50, at 20 us each the forward is launch-bound.
  // Megatron-Core's HybridEP sends the dispatch in BF16. Predicted 10,462, +17%: a miss held
  // where it is (2%) so that a change shows; FP8 now below BF16, as measured.
  const char* e2f = "e2-qwen3-30b-a3b-ep16-fp8-h100.yaml";
  auto tokens = [](double step_s) { return 1024.0 * 4096 / step_s / 16; };
  const double e2 = tokens(step(e2f).step_s);
  const double e1 = tokens(step(kE1).step_s);
  std::printf("E2 %.0f tokens/s/GPU (E1 %.0f)\n", e2, e1);
  EXPECT_NEAR(e2, 10462, 0.02 * 10462);
  EXPECT_LT(e2, e1);
  // Each mechanism slows it: without the launches (CUDA graphs) 11,120; with an FP8 dispatch
  // (DeepSeek-V3's) 10,710; with neither as before, 11,394.
  const double graphs = tokens(step(e2f, {"compute.host_launch=0us"}).step_s);
  const double fp8_dispatch = tokens(step(e2f, {"moe.fp8_dispatch=true"}).step_s);
  const double neither =
      tokens(step(e2f, {"compute.host_launch=0us", "moe.fp8_dispatch=true"}).step_s);
  EXPECT_NEAR(graphs, 11120, 0.02 * 11120);
  EXPECT_NEAR(fp8_dispatch, 10710, 0.02 * 10710);
  EXPECT_NEAR(neither, 11394, 0.02 * 11394);
  EXPECT_GT(graphs, e2);
  EXPECT_GT(fp8_dispatch, e2);
  // BF16 keeps the host ahead of the GPU: E1 is the same with or without the launches.
  EXPECT_DOUBLE_EQ(step(kE1).step_s, step(kE1, {"compute.host_launch=0us"}).step_s);
}

}  // namespace
}  // namespace stepsim::workload
