// The fat_tree generator: Al-Fares counts, wiring, oversubscription, partial population.
#include <gtest/gtest.h>

#include <set>

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

// Al-Fares et al.: k^3/4 hosts, k pods of k/2 + k/2 switches, (k/2)^2 cores = 5k^2/4 switches.
void expect_full_al_fares(std::uint32_t k) {
  SCOPED_TRACE("k = " + std::to_string(k));
  const Topology t = build("fat_tree", {{"k", std::to_string(k)}});
  EXPECT_EQ(t.server_count(), k * k * k / 4);
  EXPECT_EQ(t.switch_count(), 5 * k * k / 4);
  EXPECT_EQ(switches_in_tier(t, 1), k * k / 2);
  EXPECT_EQ(switches_in_tier(t, 2), k * k / 2);
  EXPECT_EQ(switches_in_tier(t, 3), k * k / 4);
  EXPECT_EQ(t.links.size(), 3 * k * k * k / 4);
  expect_consistent_wiring(t);
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    const Node& n = t.nodes[v];
    if (n.kind == NodeKind::kServer) {
      ASSERT_EQ(n.port_count, 1u);
      continue;
    }
    ASSERT_EQ(n.port_count, k);
    for (const Port& p : t.ports_of(v)) ASSERT_NE(p.link, kNone) << "full fat-tree: every port";
    if (n.tier == 1) {
      EXPECT_EQ(links_to_tier(t, v, 0), k / 2);
      EXPECT_EQ(links_to_tier(t, v, 2), k / 2);
    }
    if (n.tier == 2) {
      EXPECT_EQ(links_to_tier(t, v, 1), k / 2);
      EXPECT_EQ(links_to_tier(t, v, 3), k / 2);
    }
    if (n.tier == 3) {
      // A core has one link into every pod (to the same aggregation position).
      std::set<std::uint32_t> pods;
      std::set<std::uint32_t> columns;
      for (std::uint32_t i = 0; i < k; ++i) {
        const NodeId spine = peer_node(t, v, i);
        pods.insert(t.nodes[spine].group);
        // Position of the spine within its pod.
        columns.insert((spine - static_cast<NodeId>(t.server_count() + k * k / 2)) % (k / 2));
      }
      EXPECT_EQ(pods.size(), k);
      EXPECT_EQ(columns.size(), 1u);
    }
  }
}

TEST(FatTree, K4CountsMatchAlFares) {
  expect_full_al_fares(4);
}
TEST(FatTree, K16CountsMatchAlFares) {
  expect_full_al_fares(16);
}

TEST(FatTree, ServersFirstInLeafOrderThenLeavesSpinesCores) {
  const Topology t = build("fat_tree", {{"k", "8"}});
  const std::size_t servers = t.server_count();
  for (NodeId v = 0; v < t.nodes.size(); ++v) EXPECT_EQ(t.is_server(v), v < servers);
  std::uint8_t last_tier = 0;
  NodeId last_leaf = 0;
  for (NodeId s = 0; s < servers; ++s) {
    const NodeId leaf = peer_node(t, s, 0);
    EXPECT_EQ(leaf, servers + s / 4) << "server " << s;  // k/2 = 4 servers per leaf, in order
    EXPECT_GE(leaf, last_leaf);
    last_leaf = leaf;
    EXPECT_EQ(t.nodes[s].group, s / 16) << "pod of server " << s;
  }
  for (NodeId v = static_cast<NodeId>(servers); v < t.nodes.size(); ++v) {
    EXPECT_GE(t.nodes[v].tier, last_tier);
    last_tier = t.nodes[v].tier;
  }
}

TEST(FatTree, TwoTiersHaveKLeavesAndKHalfSpines) {
  const Topology t = build("fat_tree", {{"k", "8"}, {"tiers", "2"}});
  EXPECT_EQ(t.server_count(), 32u);
  EXPECT_EQ(switches_in_tier(t, 1), 8u);
  EXPECT_EQ(switches_in_tier(t, 2), 4u);
  EXPECT_EQ(switches_in_tier(t, 3), 0u);
  expect_consistent_wiring(t);
  EXPECT_EQ(server_diameter(t).links, 4u);
}

TEST(FatTree, OversubscriptionMovesLeafPortsFromUpToDown) {
  // k = 16, 3:1: a leaf has 12 server ports and 4 uplinks; a pod has 4 spines.
  const Topology t = build("fat_tree", {{"k", "16"}, {"oversubscription", "3"}});
  EXPECT_EQ(t.server_count(), 16u * 8 * 12);
  EXPECT_EQ(switches_in_tier(t, 1), 128u);
  EXPECT_EQ(switches_in_tier(t, 2), 16u * 4);
  expect_consistent_wiring(t);
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].tier != 1) continue;
    EXPECT_EQ(links_to_tier(t, v, 0), 12u);
    EXPECT_EQ(links_to_tier(t, v, 2), 4u);
    for (std::uint32_t i = 0; i < 16; ++i) {
      EXPECT_EQ(t.nodes[peer_node(t, v, i)].tier, i < 12 ? 0 : 2) << "leaf port " << i;
    }
  }
  const auto r1 = build("fat_tree", {{"k", "16"}});
  const Topology* both[] = {&r1, &t};
  for (const Topology* x : both) {
    for (const TierLoad& load : tier_loads(*x)) {
      if (load.tier == 1) {
        EXPECT_EQ(load.down.bits_per_second(), (x == &t ? 3 : 1) * load.up.bits_per_second());
      }
    }
  }
}

TEST(FatTree, OversubscriptionMustDivideTheRadix) {
  const std::string e = build_error("fat_tree", {{"k", "16"}, {"oversubscription", "2"}});
  EXPECT_NE(e.find("topology.oversubscription: 2 needs k divisible by 3"), std::string::npos) << e;
  EXPECT_NE(e.find("allowed with k = 16: 1, 3, 7, 15"), std::string::npos) << e;
}

TEST(FatTree, OddKIsRejected) {
  const std::string e = build_error("fat_tree", {{"k", "15"}});
  EXPECT_NE(e.find("topology.k: 15 is odd"), std::string::npos) << e;
}

TEST(FatTree, PartialPopulationBuildsOnlyTheNeededPodsAndLeaves) {
  // 201 servers on k = 16 (8 per leaf): 26 leaves, the last with one server, in 4 pods (8 leaves
  // each, the last with 2); 8 spines per pod; 4 pods need 2 cores per column (8 columns), each
  // spine sending 4 links to each of its 2 cores.
  const Topology t = build("fat_tree", {{"k", "16"}, {"servers", "201"}});
  EXPECT_EQ(t.server_count(), 201u);
  EXPECT_EQ(switches_in_tier(t, 1), 26u);
  EXPECT_EQ(switches_in_tier(t, 2), 32u);
  EXPECT_EQ(switches_in_tier(t, 3), 16u);
  expect_consistent_wiring(t);
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    const Node& n = t.nodes[v];
    if (n.kind == NodeKind::kServer) continue;
    if (n.tier == 1) {
      EXPECT_GE(links_to_tier(t, v, 0), 1u) << "a leaf without servers";
      EXPECT_EQ(links_to_tier(t, v, 2), 8u);
    } else if (n.tier == 2) {
      EXPECT_GE(links_to_tier(t, v, 1), 1u);
      EXPECT_EQ(links_to_tier(t, v, 3), 8u) << "spine uplinks all cabled";
    } else {
      EXPECT_EQ(links_to_tier(t, v, 2), 16u) << "4 pods x 4 bundled links";
    }
  }
  EXPECT_EQ(server_diameter(t).links, 6u);
  // The last leaf holds only server 200.
  EXPECT_EQ(links_to_tier(t, peer_node(t, 200, 0), 0), 1u);
}

TEST(FatTree, OnePodNeedsNoCoreAndOneLeafNoSpine) {
  const Topology pod = build("fat_tree", {{"k", "16"}, {"servers", "20"}});
  EXPECT_EQ(switches_in_tier(pod, 1), 3u);
  EXPECT_EQ(switches_in_tier(pod, 2), 8u);
  EXPECT_EQ(switches_in_tier(pod, 3), 0u);
  EXPECT_EQ(server_diameter(pod).links, 4u);
  const Topology leaf = build("fat_tree", {{"k", "16"}, {"servers", "5"}});
  EXPECT_EQ(leaf.switch_count(), 1u);
  EXPECT_EQ(leaf.links.size(), 5u);
  EXPECT_EQ(server_diameter(leaf).links, 2u);
}

TEST(FatTree, TooManyServersNamesTheCapacity) {
  const std::string e = build_error("fat_tree", {{"k", "4"}, {"servers", "17"}});
  EXPECT_NE(e.find("topology.servers: 17 servers do not fit a 3-tier k=4 fat-tree (at most 16"),
            std::string::npos)
      << e;
}

TEST(FatTree, GpusPerServerShareTheOneNic) {
  const Topology t = build("fat_tree", {{"k", "4"}, {"gpus_per_server", "8"}});
  EXPECT_EQ(t.gpu_count(), 128u);
  EXPECT_EQ(t.nic_count(), 16u);
}

}  // namespace
}  // namespace stepsim::topology
