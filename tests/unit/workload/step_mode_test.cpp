// step.mode: auto (the default) resolves to the whole step at packet and cell fidelity and to the
// memoized step at ideal and analytical; explicit memoized and whole win; an explicit whole at
// ideal or analytical fidelity is refused with one message; the memoized step ignores
// step.fold. (What the outputs record: tests/cli/run.sh.)
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/simulate.hpp"

namespace stepsim::workload {
namespace {

const std::string kStepModeTiny = std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml";

Scenario step_mode_scenario(const std::vector<std::string>& sets) {
  auto s = load_scenario(kStepModeTiny, sets);
  EXPECT_TRUE(s.ok()) << s.error().message;
  Scenario out;
  if (s.ok()) out = std::move(s).value();
  return out;
}

// validate()'s message, or "" when the scenario passes.
std::string step_mode_error(const std::vector<std::string>& sets) {
  const Scenario s = step_mode_scenario(sets);
  auto topo = topology::load_topology(s.topology);
  EXPECT_TRUE(topo.ok());
  if (!topo) return "no topology";
  auto ok = validate(s, *topo);
  return ok ? std::string() : ok.error().message;
}

TEST(StepMode, TheDefaultIsAuto) {
  const Scenario defaults;
  EXPECT_EQ(defaults.step_mode, "auto");
  EXPECT_EQ(step_mode_scenario({}).step_mode, "auto");  // tiny.yaml names no step.mode
}

TEST(StepMode, AutoIsWholeAtPacketAndCellMemoizedAtIdealAndAnalytical) {
  for (const char* fid : {"packet", "cell"}) {
    const Scenario s = step_mode_scenario({std::string("fidelity=") + fid});
    EXPECT_STREQ(resolved_step_mode(s), "whole") << fid;
    EXPECT_TRUE(runs_whole_step(s)) << fid;
    EXPECT_TRUE(step_execution(s).whole) << fid;
    EXPECT_EQ(step_mode_error({std::string("fidelity=") + fid}), "") << fid;
  }
  for (const char* fid : {"ideal", "analytical"}) {
    const Scenario s = step_mode_scenario({std::string("fidelity=") + fid});
    EXPECT_STREQ(resolved_step_mode(s), "memoized") << fid;
    EXPECT_FALSE(runs_whole_step(s)) << fid;
    EXPECT_FALSE(step_execution(s).whole) << fid;
    EXPECT_EQ(step_mode_error({std::string("fidelity=") + fid}), "") << fid;
  }
}

TEST(StepMode, AutoFollowsAFidelityChangedAfterLoading) {
  // The planner and the sweeps change the fidelity of a loaded scenario: the mode follows.
  Scenario s = step_mode_scenario({});
  s.fidelity = "analytical";
  EXPECT_STREQ(resolved_step_mode(s), "memoized");
  s.fidelity = "cell";
  EXPECT_STREQ(resolved_step_mode(s), "whole");
}

TEST(StepMode, ExplicitValuesWin) {
  for (const char* fid : {"packet", "cell"}) {
    const Scenario m = step_mode_scenario({std::string("fidelity=") + fid, "step.mode=memoized"});
    EXPECT_STREQ(resolved_step_mode(m), "memoized") << fid;
    EXPECT_FALSE(runs_whole_step(m)) << fid;
    const Scenario w = step_mode_scenario({std::string("fidelity=") + fid, "step.mode=whole"});
    EXPECT_STREQ(resolved_step_mode(w), "whole") << fid;
    EXPECT_TRUE(runs_whole_step(w)) << fid;
  }
  const Scenario m = step_mode_scenario({"fidelity=ideal", "step.mode=memoized"});
  EXPECT_STREQ(resolved_step_mode(m), "memoized");
}

TEST(StepMode, WholeAtIdealOrAnalyticalIsRefusedWithOneMessage) {
  for (const char* fid : {"ideal", "analytical"}) {
    const std::string e = step_mode_error({std::string("fidelity=") + fid, "step.mode=whole"});
    EXPECT_NE(e.find("tiny.yaml: step.mode whole needs packet or cell fidelity (this run: "
                     "fidelity " +
                     std::string(fid) + ")"),
              std::string::npos)
        << e;
    EXPECT_FALSE(
        runs_whole_step(step_mode_scenario({std::string("fidelity=") + fid, "step.mode=whole"})));
  }
}

TEST(StepMode, UnknownValueNamesTheAllowedOnes) {
  auto s = load_scenario(kStepModeTiny, {"step.mode=fast"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("allowed: auto, whole, memoized"), std::string::npos)
      << s.error().message;
}

TEST(StepMode, TheMemoizedStepIgnoresTheFold) {
  // A scenario that folds its whole step (as workloads/gpt3-175b.yaml does) still runs memoized
  // and analytical: nothing to fold there, no error.
  EXPECT_EQ(step_mode_error({"step.fold=rails", "step.mode=memoized"}), "");
  EXPECT_EQ(step_mode_error({"step.fold=rails", "fidelity=analytical"}), "");
  EXPECT_FALSE(runs_whole_step(step_mode_scenario({"step.fold=rails", "fidelity=analytical"})));
}

TEST(StepMode, SeveralJobsNeedTheWholeStep) {
  const std::string two = std::string(STEPSIM_SOURCE_DIR) + "/tests/data/two-jobs.yaml";
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"step.mode=memoized"},
        std::vector<std::string>{"step.mode=auto", "fidelity=ideal"}}) {
    auto s = load_scenario(two, sets);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto topo = topology::load_topology(s->topology);
    ASSERT_TRUE(topo.ok());
    auto ok = validate(*s, *topo);
    ASSERT_FALSE(ok.ok());
    EXPECT_NE(ok.error().message.find("jobs: several jobs share the fabric only in the whole step"),
              std::string::npos)
        << ok.error().message;
  }
  auto s = load_scenario(two, {"step.mode=auto"});
  ASSERT_TRUE(s.ok());
  auto topo = topology::load_topology(s->topology);
  ASSERT_TRUE(topo.ok());
  EXPECT_TRUE(validate(*s, *topo).ok());
  EXPECT_TRUE(runs_whole_step(*s));
}

}  // namespace
}  // namespace stepsim::workload
