// Traffic patterns (fabric/traffic.hpp): every name traffic_patterns() lists (what `bench fabric
// --pattern` accepts and its help says) builds flows, and an unknown one's error lists them.
#include "stepsim/fabric/traffic.hpp"

#include <gtest/gtest.h>

#include "tests/support/small_topologies.hpp"

namespace stepsim::fabric {
namespace {

TEST(Traffic, EveryListedPatternBuildsFlowsAndAnUnknownOneNamesThemAll) {
  const auto topo = testing::leaf_spine(2, 2, 8);  // 16 NICs on one rail
  ASSERT_GE(traffic_patterns().size(), 5u);
  for (const std::string& pattern : traffic_patterns()) {
    TrafficSpec spec;
    spec.pattern = pattern;
    const auto flows = make_flows(topo, spec);
    ASSERT_TRUE(flows.ok()) << pattern << ": " << flows.error().message;
    EXPECT_FALSE(flows->empty()) << pattern;
    for (const Flow& f : *flows) EXPECT_NE(f.src_nic, f.dst_nic) << pattern;
  }
  TrafficSpec spec;
  spec.pattern = "tornado";
  const auto bad = make_flows(topo, spec);
  ASSERT_FALSE(bad.ok());
  for (const std::string& pattern : traffic_patterns()) {
    EXPECT_NE(bad.error().message.find(pattern), std::string::npos) << bad.error().message;
  }
}

}  // namespace
}  // namespace stepsim::fabric
