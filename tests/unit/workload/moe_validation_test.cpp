// Published MoE training steps (../shared/validation/moe.md E1, E2) against the step model at
// analytical fidelity, with the scenario files in workloads/validation/ (Qwen3-30B-A3B, EP16 on
// two DGX H100, DeepEP's normal kernels). Nothing is fitted on them: the GEMM efficiency is
// H100's (fitted on M3 and M6, mfu.md), the dispatch is DeepEP's (E3, E4). Both miss: the step
// comes out 36% (E1) and more (E2) fast, its compute about half the measured (docs/workload.md,
// "Published MoE cases"); they are held where they are so that a change shows.
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

TEST(MoeValidation, E1_E2_KnownMissesHeldWhereTheyAre) {
  // Published: 24.71 s without overlap, 20.99 s with; E2 8,960 tokens/s/GPU.
  const double none = step(kE1).step_s;
  const double f1b = step(kE1, {"moe.overlap=1f1b"}).step_s;
  const double e2 = 1024.0 * 4096 / step("e2-qwen3-30b-a3b-ep16-fp8-h100.yaml").step_s / 16;
  std::printf("E1 %.2f s / %.2f s (gain %.1f%%), E2 %.0f tokens/s/GPU\n", none, f1b,
              100 * (1 - f1b / none), e2);
  EXPECT_NEAR(none, 15.79, 0.02 * 15.79);
  EXPECT_NEAR(f1b, 11.96, 0.02 * 11.96);
  EXPECT_NEAR(e2, 20500, 0.02 * 20500);
  // NCCL's all-to-all moves each token once per expert across the servers: slower than DeepEP.
  EXPECT_GT(step(kE1, {"moe.dispatcher=alltoall"}).step_s, 1.5 * none);
}

}  // namespace
}  // namespace stepsim::workload
