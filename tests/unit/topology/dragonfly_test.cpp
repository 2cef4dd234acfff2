// The dragonfly generator: counts, all-to-all groups, global links between every pair of groups.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "stepsim/topology/topology_metrics.hpp"
#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::build;
using testing::build_error;
using testing::expect_consistent_wiring;

// Global links per (smaller group, larger group) pair; local links per router pair.
struct LinkCensus {
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> global;
  std::map<std::pair<NodeId, NodeId>, int> local;
};

LinkCensus census(const Topology& t) {
  LinkCensus c;
  for (const Link& l : t.links) {
    const NodeId x = t.ports[l.a].node;
    const NodeId y = t.ports[l.b].node;
    if (t.is_server(x) || t.is_server(y)) continue;
    const std::uint32_t gx = t.nodes[x].group;
    const std::uint32_t gy = t.nodes[y].group;
    if (gx == gy) {
      ++c.local[{std::min(x, y), std::max(x, y)}];
    } else {
      ++c.global[{std::min(gx, gy), std::max(gx, gy)}];
    }
  }
  return c;
}

TEST(Dragonfly, BalancedDefaultHasOneGlobalLinkPerGroupPair) {
  // a = 4, p = 2, h = 2: g = a*h + 1 = 9 groups, 72 servers, 36 routers of radix 7.
  const Topology t = build("dragonfly", {});
  EXPECT_EQ(t.server_count(), 72u);
  EXPECT_EQ(t.switch_count(), 36u);
  EXPECT_EQ(t.links.size(), 72u + 9 * 6 + 9 * 8 / 2);
  expect_consistent_wiring(t);
  const LinkCensus c = census(t);
  EXPECT_EQ(c.global.size(), 9u * 8 / 2);
  for (const auto& [pair, n] : c.global) EXPECT_EQ(n, 1) << pair.first << "-" << pair.second;
  EXPECT_EQ(c.local.size(), 9u * 6);
  for (const auto& [pair, n] : c.local) EXPECT_EQ(n, 1);
  for (NodeId v = 72; v < t.nodes.size(); ++v) {
    EXPECT_EQ(t.nodes[v].port_count, 7u);
    EXPECT_EQ(t.nodes[v].tier, 1);
    for (const Port& p : t.ports_of(v)) EXPECT_NE(p.link, kNone) << "every router port used";
  }
  // host-router, local, global, local, router-host.
  EXPECT_EQ(server_diameter(t).links, 5u);
}

TEST(Dragonfly, ServersComeRouterByRouterAndGroupByGroup) {
  const Topology t = build("dragonfly", {{"hosts_per_router", "3"}});
  const std::size_t servers = t.server_count();
  EXPECT_EQ(servers, 9u * 4 * 3);
  for (NodeId s = 0; s < servers; ++s) {
    const NodeId r = testing::peer_node(t, s, 0);
    EXPECT_EQ(r, servers + s / 3) << "server " << s;
    EXPECT_EQ(t.nodes[s].group, s / 12);
    EXPECT_EQ(t.nodes[r].group, s / 12);
  }
}

TEST(Dragonfly, FewerGroupsGetSeveralLinksPerPair) {
  // g = 5: 8 global ports per group over 4 other groups = 2 links per pair.
  const Topology t = build("dragonfly", {{"groups", "5"}});
  expect_consistent_wiring(t);
  const LinkCensus c = census(t);
  EXPECT_EQ(c.global.size(), 10u);
  for (const auto& [pair, n] : c.global) EXPECT_EQ(n, 2);
  // g = 4: 8 ports over 3 others = 2 per pair, 2 ports per group left unused.
  const LinkCensus c4 = census(build("dragonfly", {{"groups", "4"}}));
  EXPECT_EQ(c4.global.size(), 6u);
  for (const auto& [pair, n] : c4.global) EXPECT_EQ(n, 2);
}

TEST(Dragonfly, GlobalLinksSpreadOverTheRoutersOfAGroup) {
  const Topology t = build(
      "dragonfly",
      {{"routers_per_group", "8"}, {"hosts_per_router", "4"}, {"global_links_per_router", "4"}});
  EXPECT_EQ(t.server_count(), 33u * 8 * 4);
  const LinkCensus c = census(t);
  EXPECT_EQ(c.global.size(), 33u * 32 / 2);
  std::set<NodeId> routers_with_globals;
  for (const Link& l : t.links) {
    const NodeId x = t.ports[l.a].node;
    const NodeId y = t.ports[l.b].node;
    if (!t.is_server(x) && t.nodes[x].group != t.nodes[y].group) {
      routers_with_globals.insert(x);
      routers_with_globals.insert(y);
    }
  }
  EXPECT_EQ(routers_with_globals.size(), 33u * 8);
}

TEST(Dragonfly, TooManyGroupsCannotAllConnect) {
  const std::string e = build_error("dragonfly", {{"groups", "10"}});
  EXPECT_NE(e.find("topology.groups: 10 groups cannot all be connected: allowed 2 to a*h + 1 = 9"),
            std::string::npos)
      << e;
}

TEST(Dragonfly, BisectionIsTheGlobalLinksBetweenTheHalves) {
  // g = 8, one link per pair: the first 4 groups reach the last 4 over 4 x 4 global links.
  const Topology t = build("dragonfly", {{"groups", "8"}});
  const Bisection b = bisection(t);
  EXPECT_EQ(b.first_half, 32u);
  EXPECT_EQ(b.capacity.bits_per_second(), 16 * t.link_rate(0).bits_per_second());
  EXPECT_EQ(b.injection.bits_per_second(), 32 * t.link_rate(0).bits_per_second());
}

}  // namespace
}  // namespace stepsim::topology
