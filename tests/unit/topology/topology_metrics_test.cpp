// Bisection bandwidth, diameter and per-tier capacity against closed-form values.
#include "stepsim/topology/topology_metrics.hpp"

#include <gtest/gtest.h>

#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::build;

TEST(TopologyMetrics, FullFatTreeBisectionIsHalfTheServersAtLineRate) {
  for (const char* k : {"4", "8", "16"}) {
    SCOPED_TRACE(k);
    const Topology t = build("fat_tree", {{"k", k}});
    const Bisection b = bisection(t);
    const std::int64_t rate = t.link_rate(0).bits_per_second();
    EXPECT_EQ(b.first_half, t.server_count() / 2);
    EXPECT_EQ(b.capacity.bits_per_second(), static_cast<std::int64_t>(b.first_half) * rate);
    EXPECT_EQ(b.injection, b.capacity);
  }
}

TEST(TopologyMetrics, OversubscribedFatTreeBisectionIsDividedByTheRatio) {
  // k = 16, 3:1 and 7:1 (leaves 12:4 and 14:2): S/2 x rate / r.
  for (const int r : {3, 7}) {
    const Topology t = build("fat_tree", {{"k", "16"}, {"oversubscription", std::to_string(r)}});
    const Bisection b = bisection(t);
    const std::int64_t rate = t.link_rate(0).bits_per_second();
    EXPECT_EQ(b.capacity.bits_per_second() * r, static_cast<std::int64_t>(b.first_half) * rate)
        << r;
  }
}

TEST(TopologyMetrics, TwoTierBisectionCountsTheSpineLinksOfHalfTheLeaves) {
  // k = 8, 2 tiers, 3:1: 8 leaves of 6 servers and 2 uplinks; half the leaves send 8 uplinks.
  const Topology t = build("fat_tree", {{"k", "8"}, {"tiers", "2"}, {"oversubscription", "3"}});
  EXPECT_EQ(t.server_count(), 48u);
  EXPECT_EQ(bisection(t).capacity.bits_per_second(), 8 * t.link_rate(0).bits_per_second());
}

TEST(TopologyMetrics, BisectionSumsThePlanesAndHandlesASharedLeaf) {
  const Topology t = build("rail_optimized", {{"servers", "40"},
                                              {"switch_radix", "8"},
                                              {"gpus_per_server", "4"},
                                              {"oversubscription", "3"},
                                              {"tiers", "2"}});
  // Radix 8 at 3:1: 6 servers + 2 uplinks per leaf, 7 leaves per plane. The first 20 servers
  // fill leaves 0-2 and 2 of leaf 3's 6 places: per plane the smallest cut is the 6 uplinks of
  // leaves 0-2 plus the 2 server links into the shared leaf (taking leaf 3 into the first half
  // costs 2 + 4 instead). Four planes.
  EXPECT_EQ(bisection(t).capacity.bits_per_second(), 4 * 8 * t.link_rate(0).bits_per_second());
}

TEST(TopologyMetrics, TierLoadsAndLinkClasses) {
  const Topology t = build("fat_tree", {{"k", "4"}});
  const auto loads = tier_loads(t);
  ASSERT_EQ(loads.size(), 3u);
  const std::int64_t rate = t.link_rate(0).bits_per_second();
  EXPECT_EQ(loads[0].tier, 1);
  EXPECT_EQ(loads[0].switches, 8u);
  EXPECT_EQ(loads[0].down.bits_per_second(), 16 * rate);
  EXPECT_EQ(loads[0].up.bits_per_second(), 16 * rate);
  EXPECT_EQ(loads[2].up.bits_per_second(), 0);
  EXPECT_EQ(loads[2].down.bits_per_second(), 16 * rate);
  const auto classes = link_class_stats(t);
  ASSERT_EQ(classes.size(), 3u);
  for (const auto& c : classes) EXPECT_EQ(c.links, 16u);
  EXPECT_EQ(classes[1].cables, std::vector<CableKind>{CableKind::kAoc});
  EXPECT_EQ(classes[1].min_length, Length::m(30));
  EXPECT_EQ(classes[2].capacity.bits_per_second(), 16 * rate);
}

TEST(TopologyMetrics, DragonflyLocalAndGlobalCapacity) {
  const Topology t = build("dragonfly", {});
  const auto loads = tier_loads(t);
  ASSERT_EQ(loads.size(), 1u);
  const std::int64_t rate = t.link_rate(0).bits_per_second();
  EXPECT_EQ(loads[0].down.bits_per_second(), 72 * rate);
  EXPECT_EQ(loads[0].local.bits_per_second(), 36 * 3 * rate);
  EXPECT_EQ(loads[0].global.bits_per_second(), 36 * 2 * rate);
}

TEST(TopologyMetrics, DiameterFindsDisconnectedServers) {
  Topology t;
  t.port_types.push_back(phy::standard_port("400G").value());
  t.add_node(NodeKind::kServer, 0, 1);
  t.add_node(NodeKind::kServer, 0, 1);
  t.add_node(NodeKind::kSwitch, 1, 2);
  t.add_node(NodeKind::kSwitch, 1, 2);
  t.connect(0, 0, 2, 0, LinkSpec{});
  t.connect(1, 0, 3, 0, LinkSpec{});
  EXPECT_FALSE(server_diameter(t).connected);
  t.connect(2, 1, 3, 1, LinkSpec{});
  EXPECT_TRUE(server_diameter(t).connected);
  EXPECT_EQ(server_diameter(t).links, 3u);
}

}  // namespace
}  // namespace stepsim::topology
