// Scenario loading: where a relative topology path points (the scenario's directory, or the
// current directory for a `--set topology=` that exists there).
#include "stepsim/workload/scenario.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace stepsim::workload {
namespace {

namespace fs = std::filesystem;

// A scenario <root>/workloads/s.yaml naming t.yaml; the test runs from <root>/run, which holds a
// t.yaml and a mine.yaml, and restores the working directory afterwards.
class ScenarioTopologyPath : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test: ctest runs the cases in parallel processes.
    root_ = fs::path(::testing::TempDir()) /
            (std::string("scenario_topology_path.") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "workloads");
    fs::create_directories(root_ / "run");
    scenario_ = (root_ / "workloads" / "s.yaml").string();
    std::ofstream(scenario_) << "topology: t.yaml\n";
    std::ofstream(root_ / "run" / "t.yaml") << "topology: {}\n";
    std::ofstream(root_ / "run" / "mine.yaml") << "topology: {}\n";
    saved_ = fs::current_path();
    fs::current_path(root_ / "run");
  }
  void TearDown() override {
    fs::current_path(saved_);
    fs::remove_all(root_);
  }
  std::string topology_with(const std::vector<std::string>& sets) {
    auto s = load_scenario(scenario_, sets);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? s.value().topology : std::string();
  }
  fs::path root_;
  std::string scenario_;
  fs::path saved_;
};

TEST_F(ScenarioTopologyPath, TheScenariosOwnIsRelativeToTheScenarioFile) {
  // Even with a t.yaml in the current directory, and with other keys set.
  EXPECT_EQ(topology_with({}), (root_ / "workloads" / "t.yaml").string());
  EXPECT_EQ(topology_with({"fidelity=ideal"}), (root_ / "workloads" / "t.yaml").string());
}

TEST_F(ScenarioTopologyPath, SetNamingAFileHereIsTakenFromTheCurrentDirectory) {
  EXPECT_EQ(topology_with({"topology=mine.yaml"}), "mine.yaml");
}

TEST_F(ScenarioTopologyPath, SetNamingNoFileHereIsRelativeToTheScenarioFile) {
  EXPECT_EQ(topology_with({"topology=../topologies/other.yaml"}),
            (root_ / "topologies" / "other.yaml").string());
}

TEST_F(ScenarioTopologyPath, AbsolutePathsStayAsGiven) {
  const std::string abs = (root_ / "elsewhere.yaml").string();
  EXPECT_EQ(topology_with({"topology=" + abs}), abs);
}

}  // namespace
}  // namespace stepsim::workload
