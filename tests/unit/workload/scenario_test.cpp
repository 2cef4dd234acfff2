#include "stepsim/workload/scenario.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::workload {
namespace {

const std::string kTiny = std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml";

std::string validate_error(const std::vector<std::string>& sets) {
  auto s = load_scenario(kTiny, sets);
  if (!s) return s.error().message;
  auto topo = topology::load_topology(s->topology);
  EXPECT_TRUE(topo.ok());
  auto ok = validate(*s, *topo);
  return ok ? std::string() : ok.error().message;
}

TEST(Scenario, TheTinyScenarioIsValid) {
  EXPECT_EQ(validate_error({}), "");
}

// Issue 15: tp x pp = 2^32 wrapped int to 0 (a divide-by-zero signal).
TEST(Scenario, ParallelSizesWhoseProductOverflowsAreAUserError) {
  const std::string e = validate_error({"parallel.tp=65536", "parallel.pp=65536"});
  EXPECT_NE(e.find("tp x pp x cp x dp = 8589934592 GPUs, more than 16777216"), std::string::npos)
      << e;
  const std::string g = validate_error(
      {"parallel.tp=65536", "parallel.pp=65536", "parallel.dp=0", "parallel.gpus=16777216"});
  EXPECT_NE(g.find("more than 16777216"), std::string::npos) << g;
  const std::string c = validate_error({"parallel.cp=65536", "parallel.pp=65536"});
  EXPECT_NE(c.find("GPUs, more than"), std::string::npos) << c;
}

// Issue 15: global_batch 2^31 threw std::length_error, 2^40 reported MFU 2e13 %.
TEST(Scenario, MicroBatchesBeyondTheScheduleBoundAreAUserError) {
  for (const char* gb : {"2147483648", "1099511627776", "8388608"}) {
    const std::string e = validate_error({std::string("parallel.global_batch=") + gb});
    EXPECT_NE(e.find("parallel.global_batch (" + std::string(gb) + ") gives"), std::string::npos)
        << e;
    EXPECT_NE(e.find("pipeline passes"), std::string::npos) << e;
  }
  // Up to the bound it is fine: 2 x 2097152 passes with pp 2 and micro_batch x dp = 2.
  EXPECT_EQ(validate_error({"parallel.global_batch=4194304"}), "");
}

}  // namespace
}  // namespace stepsim::workload
