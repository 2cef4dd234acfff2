// Published training throughput (../shared/validation/mfu.md) against the step model at ideal
// fidelity, with the scenario files in workloads/validation/. Fitted, once per GPU and
// precision (src/gpu/gpu_spec.cpp): A100 BF16 on M1, H100 BF16 on M3, H100 FP8 on M6 (128 GPUs).
// Everything else is a prediction, held to mfu.md's 10%, except one at its edge (M4 on 1,024
// GPUs, -9.6%, see docs/workload.md), held to where it is so that a change shows.
#include <gtest/gtest.h>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

double step_seconds(const std::string& file, const std::vector<std::string>& sets = {}) {
  const auto s =
      load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/validation/" + file, sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  const auto topo = topology::load_topology(s->topology).value();
  EXPECT_TRUE(validate(*s, topo).ok());
  auto comm = make_ideal_comm(topo, *s);
  return run_step(*s, topo, *comm).value().step_s;
}

// Megatron-LM's FLOPs per iteration, the 96-formula (full recompute) and the 72-formula.
double megatron(double B, double s, double l, double h, double V, bool recompute) {
  return recompute ? 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
                   : 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

TEST(MfuValidation, FitsHoldTheirCases) {
  // M1: 163 TFLOP/s per GPU (96-formula), 3,072 A100.
  EXPECT_NEAR(megatron(3072, 2048, 128, 25600, 51200, true) /
                  step_seconds("m1-megatron-1t-a100.yaml") / 3072 / 1e12,
              163, 0.01 * 163);
  // M3: 459.9 TFLOP/s per GPU (model FLOPs), 6,144 H100.
  EXPECT_NEAR(megatron(3072, 4096, 112, 18432, 131072, false) /
                  step_seconds("m3-megatron-core-462b-h100.yaml") / 6144 / 1e12,
              459.9, 0.01 * 459.9);
  // M6, 128 GPUs: 745 tokens/s/GPU in FP8.
  EXPECT_NEAR(256.0 * 2048 / step_seconds("m6-nemo-175b-fp8-h100.yaml") / 128, 745, 0.01 * 745);
}

TEST(MfuValidation, PredictionsWithinTenPercent) {
  // M2: 148 TFLOP/s (145.6B on 1,536 A100) and 135 (18.4B on 256), 96-formula.
  EXPECT_NEAR(megatron(2304, 2048, 80, 12288, 51200, true) /
                  step_seconds("m2-megatron-145b-a100.yaml") / 1536 / 1e12,
              148, 0.10 * 148);
  EXPECT_NEAR(megatron(1024, 2048, 40, 6144, 51200, true) /
                  step_seconds("m2-megatron-18b-a100.yaml") / 256 / 1e12,
              135, 0.10 * 135);
  // M4: iteration 40.0 s on 256 A100, 21.2 s on 512, 15.2 s on 768.
  EXPECT_NEAR(step_seconds("m4-megascale-175b-a100.yaml"), 40.0, 0.10 * 40.0);
  EXPECT_NEAR(step_seconds("m4-megascale-175b-a100.yaml", {"parallel.dp=8"}), 21.2, 0.10 * 21.2);
  EXPECT_NEAR(step_seconds("m4-megascale-175b-a100.yaml", {"parallel.dp=12"}), 15.2, 0.10 * 15.2);
  // M5: Llama 3 405B, 430 TFLOP/s per GPU by PaLM's definition.
  const double h = 16384, L = 126;
  const double layer = 2 * h * h + 2 * h * 8 * 128 + 3 * h * 53248;
  const double per_token = 6 * L * layer + 12 * L * 128 * 128 * 8192;
  EXPECT_NEAR(per_token * 2048 * 8192 / step_seconds("m5-llama3-405b-h100.yaml") / 8192 / 1e12, 430,
              0.10 * 430);
  // M6, 512 GPUs: 832 tokens/s/GPU.
  const double t =
      step_seconds("m6-nemo-175b-fp8-h100.yaml",
                   {"parallel.dp=16", "parallel.global_batch=2048", "parallel.micro_batch=2"});
  EXPECT_NEAR(2048.0 * 2048 / t / 512, 832, 0.10 * 832);
}

TEST(MfuValidation, KnownMissesStayWhereTheyAre) {
  // M4 on 1,024 GPUs: published 11.9 s; the model scales better than the measured baseline
  // did (-9.6%; -10.6% before the GEMM epilogue, the FFN activation and Hopper's attention
  // rates).
  const double t1024 = step_seconds("m4-megascale-175b-a100.yaml", {"parallel.dp=16"});
  EXPECT_LT(t1024, 11.9);
  EXPECT_GT(t1024, 0.85 * 11.9);
}

}  // namespace
}  // namespace stepsim::workload
