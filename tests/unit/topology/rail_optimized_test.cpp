// The rail_optimized generator: planes, NIC-to-plane wiring, bundling, the shipped 16k files.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/topology/topology_metrics.hpp"
#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::build;
using testing::build_error;
using testing::expect_consistent_wiring;
using testing::links_to_tier;
using testing::peer_node;
using testing::switches_in_tier;

// Every switch reachable from NIC i of any server (over switches only) is on plane i.
void expect_nic_i_only_reaches_plane_i(const Topology& t) {
  for (NodeId s = 0; s < t.nodes.size(); ++s) {
    if (!t.is_server(s)) continue;
    for (std::uint32_t nic = 0; nic < t.nodes[s].port_count; ++nic) {
      std::vector<bool> seen(t.nodes.size(), false);
      std::vector<NodeId> queue{peer_node(t, s, nic)};
      seen[queue[0]] = true;
      for (std::size_t head = 0; head < queue.size(); ++head) {
        const NodeId v = queue[head];
        ASSERT_EQ(t.nodes[v].plane, nic) << "server " << s << " NIC " << nic;
        for (const Port& p : t.ports_of(v)) {
          if (p.link == kNone) continue;
          const NodeId w = t.ports[p.peer].node;
          if (t.is_server(w)) {
            ASSERT_EQ(t.ports[p.peer].index, nic)
                << "a plane-" << nic << " switch reaches NIC " << t.ports[p.peer].index;
          } else if (!seen[w]) {
            seen[w] = true;
            queue.push_back(w);
          }
        }
      }
    }
    if (s > 40) break;  // the structure repeats; a few leaves' worth of servers is enough
  }
}

TEST(RailOptimized, NicIReachesOnlyPlaneISwitches) {
  const Topology t =
      build("rail_optimized", {{"servers", "96"}, {"switch_radix", "8"}, {"tiers", "3"}});
  // Radix 8: 4 servers per leaf, 24 leaves per plane, 4 leaves per pod -> 6 pods, 4 spines per
  // pod; 6 pods need 4 cores per column (smallest divisor of 4 that is >= 3).
  EXPECT_EQ(t.server_count(), 96u);
  EXPECT_EQ(t.gpu_count(), 768u);
  EXPECT_EQ(t.nic_count(), 768u);
  EXPECT_EQ(plane_count(t), 8u);
  EXPECT_EQ(switches_in_tier(t, 1), 8u * 24);
  EXPECT_EQ(switches_in_tier(t, 2), 8u * 24);
  EXPECT_EQ(switches_in_tier(t, 3), 8u * 16);
  expect_consistent_wiring(t);
  expect_nic_i_only_reaches_plane_i(t);
  EXPECT_EQ(server_diameter(t).links, 6u);
}

TEST(RailOptimized, SwitchesCarryPlaneTierAndPod) {
  const Topology t =
      build("rail_optimized", {{"servers", "64"}, {"switch_radix", "8"}, {"gpus_per_server", "2"}});
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    const Node& n = t.nodes[v];
    if (n.kind == NodeKind::kServer) {
      EXPECT_EQ(n.port_count, 2u);
      EXPECT_EQ(n.group, v / 16) << "pod = 4 leaves x 4 servers";
      continue;
    }
    EXPECT_GE(n.tier, 1);
    EXPECT_LE(n.tier, 3);
    EXPECT_LT(n.plane, 2);
    for (const Port& p : t.ports_of(v)) {
      if (p.link == kNone) continue;
      const Node& peer = t.nodes[t.ports[p.peer].node];
      if (peer.kind == NodeKind::kSwitch) {
        EXPECT_EQ(peer.plane, n.plane);
        if (n.tier == 1) {
          EXPECT_EQ(peer.group, n.group) << "a leaf's spines are in its pod";
        }
      }
    }
  }
  // Planes are numbered one after the other: all of plane 0's switches come first.
  std::uint16_t last_plane = 0;
  for (NodeId v = 64; v < t.nodes.size(); ++v) {
    EXPECT_GE(t.nodes[v].plane, last_plane);
    last_plane = t.nodes[v].plane;
  }
}

TEST(RailOptimized, TwoTierPlaneBundlesUplinksIntoTheFewestSpines) {
  // 128 servers, radix 64: 4 leaves of 32 servers per plane; their 128 uplinks fill 2 spines,
  // 16 parallel links per leaf-spine pair.
  const Topology t = build("rail_optimized", {{"servers", "128"}, {"tiers", "2"}}, "800G");
  EXPECT_EQ(switches_in_tier(t, 1), 32u);
  EXPECT_EQ(switches_in_tier(t, 2), 16u);
  EXPECT_EQ(t.links.size(), 8u * (128 + 4 * 32));
  expect_consistent_wiring(t);
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].tier != 1) continue;
    std::map<NodeId, int> per_spine;
    for (std::uint32_t i = 32; i < 64; ++i) ++per_spine[peer_node(t, v, i)];
    ASSERT_EQ(per_spine.size(), 2u);
    for (const auto& [spine, n] : per_spine) EXPECT_EQ(n, 16);
  }
  const Bisection b = bisection(t);
  EXPECT_EQ(b.capacity, b.injection) << "bundled spines keep full bisection";
}

TEST(RailOptimized, ToyHasOneLeafPerPlaneAndNoSpine) {
  const Topology t = build("rail_optimized", {{"servers", "2"}, {"tiers", "2"}});
  EXPECT_EQ(t.switch_count(), 8u);
  EXPECT_EQ(switches_in_tier(t, 1), 8u);
  EXPECT_EQ(t.links.size(), 16u);
  EXPECT_EQ(server_diameter(t).links, 2u);
}

TEST(RailOptimized, OversubscribedLeavesAndCapacity) {
  const Topology t = build("rail_optimized", {{"servers", "96"},
                                              {"switch_radix", "64"},
                                              {"oversubscription", "3"},
                                              {"gpus_per_server", "4"},
                                              {"tiers", "2"}});
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].tier != 1) continue;
    EXPECT_EQ(links_to_tier(t, v, 0), 48u);
    EXPECT_EQ(links_to_tier(t, v, 2), 16u);
  }
  const std::string e = build_error(
      "rail_optimized", {{"servers", "3073"}, {"tiers", "2"}, {"oversubscription", "3"}});
  EXPECT_NE(e.find("topology.servers: 3073 servers do not fit one 2-tier plane of radix-64 "
                   "switches (at most 3072"),
            std::string::npos)
      << e;
}

TEST(RailOptimized, Shipped16kFilesHave2048ServersIn8ThreeTierPlanes) {
  for (const char* file : {"rail-16k-800g.yaml", "rail-16k-1.6t.yaml"}) {
    SCOPED_TRACE(file);
    const auto loaded = load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Topology& t = *loaded;
    EXPECT_EQ(t.server_count(), 2048u);
    EXPECT_EQ(t.gpu_count(), 16384u);
    EXPECT_EQ(t.nic_count(), 16384u);
    EXPECT_EQ(plane_count(t), 8u);
    // Per plane: 64 leaves in 2 pods of 32, 2 x 32 spines, 32 columns of 1 core.
    EXPECT_EQ(switches_in_tier(t, 1), 8u * 64);
    EXPECT_EQ(switches_in_tier(t, 2), 8u * 64);
    EXPECT_EQ(switches_in_tier(t, 3), 8u * 32);
    EXPECT_EQ(t.links.size(), 8u * 3 * 2048);
    for (const Node& n : t.nodes) {
      if (n.kind == NodeKind::kSwitch) {
        EXPECT_EQ(n.port_count, 64u);
      }
    }
    // Full bisection: 1024 servers x 8 NICs x the port rate.
    const Bisection b = bisection(t);
    EXPECT_EQ(b.capacity.bits_per_second(),
              1024LL * 8 * t.port_types[0].data_rate().bits_per_second());
    EXPECT_EQ(server_diameter(t).links, 6u);
  }
}

}  // namespace
}  // namespace stepsim::topology
