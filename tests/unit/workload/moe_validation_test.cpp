// Published MoE training steps (../shared/validation/moe.md E1, E2) against the step model at
// analytical fidelity, with the scenario files in workloads/validation/ (Qwen3-30B-A3B, EP16 on
// two DGX H100, DeepEP's normal kernels). The GEMM efficiency is H100's (fitted on M3 and M6,
// mfu.md), the dispatch DeepEP's (E3, E4); one number is fitted on E1 without overlap: Hopper's
// MoE memory-bound work per routed token (gpu.moe_elementwise_bytes). E1 with overlap and its
// gain are predictions; E2 (FP8) is one and misses, held where it is so that a change shows
// (docs/workload.md, "Published MoE cases").
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

TEST(MoeValidation, E2_KnownMissHeldWhereItIs) {
  // Published 8,960 tokens/s/GPU in FP8, below the BF16 run's 10,610. FP8 current scaling's
  // casts (amax and cast-transpose of every FP8 GEMM's inputs) are charged; they take 12,070
  // down to 11,314. The GEMM epilogue (the same time in BF16 and FP8, so short-K GEMMs gain
  // less from FP8) slows E2's 768-wide experts, but M6's refit takes it back (M6's weight
  // gradients have K = 2,048 tokens too): 11,394, still 27% fast.
  const double e2 = 1024.0 * 4096 / step("e2-qwen3-30b-a3b-ep16-fp8-h100.yaml").step_s / 16;
  std::printf("E2 %.0f tokens/s/GPU\n", e2);
  EXPECT_NEAR(e2, 11394, 0.02 * 11394);
  // The casts cost the FP8 step a share of what its GEMMs gain: BF16 (E1) stays below it.
  const double e1 = 1024.0 * 4096 / step(kE1).step_s / 16;
  EXPECT_LT(e1, e2);
}

}  // namespace
}  // namespace stepsim::workload
