// moe.overlap 1f1b in the whole step: the steady state's forward and backward run as pairs,
// each one's EP collectives beside the other's compute. Faster than without overlap, the
// hidden EP time reported apart from the exposed, and in agreement with the memoized mode's
// accounting on a small MoE step.
#include <gtest/gtest.h>

#include <cmath>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

// tiny.yaml as an MoE (8 experts, top-2, EP 2 over DP 2), 16 micro-batches per pipeline.
Scenario tiny_moe(const std::string& overlap) {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml",
                         {"model.experts=8", "model.top_k=2", "model.ffn=1024", "parallel.ep=2",
                          "parallel.global_batch=32", "parallel.vpp=2", "moe.overlap=" + overlap});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

TEST(EpOverlapWhole, OverlapInTheWholeStepHidesEpTimeAsMemoizedDoes) {
  const auto topo = topology::load_topology(tiny_moe("none").topology).value();
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  auto run = [&](const std::string& overlap, bool whole) {
    const Scenario s = tiny_moe(overlap);
    EXPECT_TRUE(validate(s, topo).ok());
    auto comm = make_packet_comm(topo, s, sync, opt);
    return whole ? run_whole_step(s, topo, {comm.get()}, sync, opt).value()
                 : run_step(s, topo, *comm).value();
  };
  const StepResult wn = run("none", true);
  const StepResult wo = run("1f1b", true);
  const StepResult mn = run("none", false);
  const StepResult mo = run("1f1b", false);
  const auto ep = static_cast<std::size_t>(CommGroup::kEp);
  ASSERT_GT(wn.exposed_s[ep], 0);
  EXPECT_EQ(wn.ep_hidden_s, 0);
  EXPECT_LT(wo.step_s, wn.step_s);
  EXPECT_GT(wo.ep_hidden_s, 0);
  EXPECT_LT(wo.exposed_s[ep], wn.exposed_s[ep]);
  // The time still adds up.
  double sum = wo.compute_s + wo.bubble_s + wo.optimizer_s;
  for (double e : wo.exposed_s) sum += e;
  EXPECT_NEAR(sum, wo.step_s, 1e-9 * wo.step_s);
  // Against the memoized mode (measured: whole 11.87 ms, memoized 10.88 ms; gains 0.60 and
  // 1.19 ms). The whole step pairs at layer granularity: the backward's EP collectives of a
  // pair's last layer have no forward layer left beside them, so with one layer per virtual
  // stage here it hides about half of what the memoized accounting hides. Tolerance: the step
  // within 10%, the gain between 40% and 120% of the memoized one.
  EXPECT_NEAR(wo.step_s, mo.step_s, 0.10 * mo.step_s) << wo.step_s << " " << mo.step_s;
  const double gain_w = wn.step_s - wo.step_s;
  const double gain_m = mn.step_s - mo.step_s;
  EXPECT_GT(gain_w, 0.4 * gain_m) << gain_w << " " << gain_m;
  EXPECT_LT(gain_w, 1.2 * gain_m) << gain_w << " " << gain_m;
  std::printf(
      "whole none %.6f 1f1b %.6f (hidden %.6f); memoized none %.6f 1f1b %.6f (hidden %.6f)\n",
      wn.step_s, wo.step_s, wo.ep_hidden_s, mn.step_s, mo.step_s, mo.ep_hidden_s);
}

TEST(EpOverlapWhole, FsdpAndFullRecomputationAreRefusedInTheWholeStep) {
  const auto topo = topology::load_topology(tiny_moe("none").topology).value();
  Scenario s = tiny_moe("1f1b");
  s.step_mode = "whole";
  ASSERT_TRUE(validate(s, topo).ok());
  s.par.recompute = "full";
  ASSERT_FALSE(validate(s, topo).ok());
  EXPECT_NE(validate(s, topo).error().message.find("parallel.recompute"), std::string::npos);
  s.par.recompute = "none";
  s.par.vpp = 1;
  ASSERT_FALSE(validate(s, topo).ok());
  EXPECT_NE(validate(s, topo).error().message.find("parallel.vpp"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::workload
