// Clos features beyond Al-Fares: several NICs per server (GPUs sharing them), spine
// oversubscription, leaf port breakout with mixed port speeds, and the shipped MegaScale shape.
#include <gtest/gtest.h>

#include <set>

#include "stepsim/topology/nic_map.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/topology/topology_metrics.hpp"
#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::build;
using testing::build_error;
using testing::expect_consistent_wiring;
using testing::links_to_tier;
using testing::switches_in_tier;

std::int64_t gbps(const Topology& t, LinkId l) {
  return t.link_rate(l).bits_per_second() / 1000'000'000;
}

TEST(ClosFeatures, GpusShareNicsInConsecutiveBlocks) {
  // 8 GPUs on 2 NICs: GPUs 0-3 use NIC 0, 4-7 NIC 1 (one PCIe switch each); NIC 1's first GPU
  // is GPU 4. One NIC per GPU and one NIC for all keep the old mapping.
  Node n;
  n.kind = NodeKind::kServer;
  n.gpus = 8;
  n.port_count = 2;
  for (std::uint32_t g = 0; g < 8; ++g) EXPECT_EQ(nic_of_gpu(n, g), g / 4) << g;
  EXPECT_EQ(gpu_of_nic(n, 0), 0u);
  EXPECT_EQ(gpu_of_nic(n, 1), 4u);
  n.port_count = 8;
  for (std::uint32_t g = 0; g < 8; ++g) EXPECT_EQ(nic_of_gpu(n, g), g);
  n.port_count = 1;
  for (std::uint32_t g = 0; g < 8; ++g) EXPECT_EQ(nic_of_gpu(n, g), 0u);
}

TEST(ClosFeatures, RailOptimizedWithFewerNicsThanGpusBuildsOnePlanePerNic) {
  const Topology t = build("rail_optimized", {{"servers", "4"},
                                              {"gpus_per_server", "8"},
                                              {"nics_per_server", "2"},
                                              {"switch_radix", "8"},
                                              {"tiers", "2"}});
  expect_consistent_wiring(t);
  EXPECT_EQ(t.gpu_count(), 32u);
  EXPECT_EQ(t.nic_count(), 8u);
  EXPECT_EQ(plane_count(t), 2u);
  // Against 8 NICs, the injection bandwidth (and the bisection) is a quarter.
  const Topology eight =
      build("rail_optimized",
            {{"servers", "4"}, {"gpus_per_server", "8"}, {"switch_radix", "8"}, {"tiers", "2"}});
  EXPECT_EQ(bisection(eight).injection.bits_per_second(),
            4 * bisection(t).injection.bits_per_second());
}

TEST(ClosFeatures, FatTreeNicsGoToDifferentLeavesOfARailGroup) {
  // k = 8, 2 NICs per server: rail groups of 2 leaves, 4 servers each; NIC i on leaf i.
  const Topology t =
      build("fat_tree", {{"k", "8"}, {"gpus_per_server", "8"}, {"nics_per_server", "2"}});
  expect_consistent_wiring(t);
  // A pod holds 4 leaves = 2 groups of 4 servers: 8 pods x 8 servers.
  EXPECT_EQ(t.server_count(), 64u);
  EXPECT_EQ(switches_in_tier(t, 1), 32u);
  for (NodeId s = 0; s < t.server_count(); ++s) {
    const NodeId leaf0 = t.ports[t.ports[t.port_id(s, 0)].peer].node;
    const NodeId leaf1 = t.ports[t.ports[t.port_id(s, 1)].peer].node;
    EXPECT_NE(leaf0, leaf1) << s;
    EXPECT_EQ(leaf1, leaf0 + 1) << s;
    EXPECT_EQ(t.nodes[leaf0].group, t.nodes[s].group) << "server " << s << " in its leaves' pod";
  }
  for (NodeId v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].tier == 1) {
      EXPECT_EQ(links_to_tier(t, v, 0), 4u);
    }
  }
}

TEST(ClosFeatures, LeafTwoToOneHalvesTheBisection) {
  // k = 12: leaf 2:1 (8 down, 4 up) against 1:1; spines 1:1. Per server: half the bisection.
  const Topology full = build("fat_tree", {{"k", "12"}});
  const Topology half = build("fat_tree", {{"k", "12"}, {"oversubscription", "2"}});
  const auto per_server = [](const Topology& t) {
    const Bisection b = bisection(t);
    return static_cast<double>(b.capacity.bits_per_second()) / static_cast<double>(b.first_half);
  };
  EXPECT_DOUBLE_EQ(per_server(half) * 2, per_server(full));
}

TEST(ClosFeatures, SpineOversubscriptionDividesTheBisectionBetweenPods) {
  // k = 8, leaf 1:1, spine 3:1 (6 leaves down, 2 cores up): pods of 6 leaves x 4 servers, 8
  // pods; the halves (4 pods each) meet only at the cores: 4 pods x 4 spines x 2 uplinks = 32
  // links for 96 servers, a third of line rate.
  const Topology t = build("fat_tree", {{"k", "8"}, {"spine_oversubscription", "3"}});
  expect_consistent_wiring(t);
  EXPECT_EQ(t.server_count(), 8u * 6 * 4);
  const Bisection b = bisection(t);
  const std::int64_t rate = t.link_rate(0).bits_per_second();
  EXPECT_EQ(b.first_half, 96u);
  EXPECT_EQ(b.capacity.bits_per_second(), 32 * rate);
  EXPECT_EQ(b.capacity.bits_per_second() * 3, static_cast<std::int64_t>(b.first_half) * rate);
  for (const TierLoad& load : tier_loads(t)) {
    if (load.tier == 1) {
      EXPECT_EQ(load.down, load.up);
    }
    if (load.tier == 2) {
      EXPECT_EQ(load.down.bits_per_second(), 3 * load.up.bits_per_second());
    }
  }
}

TEST(ClosFeatures, BreakoutWithMixedSpeedsKeepsTheLeafNonBlocking) {
  // k = 8, breakout 2: a leaf has 8 x 200G server ports (4 ports split) and 4 x 400G uplinks.
  TopologySpec spec;
  spec.kind = "fat_tree";
  spec.port = "400G";
  spec.params = {{"k", "8"}, {"tiers", "2"}, {"leaf_breakout", "2"}};
  spec.cables["server_leaf"].port = "200G";
  const auto t = generate_topology(spec);
  ASSERT_TRUE(t.ok()) << t.error().message;
  expect_consistent_wiring(*t);
  EXPECT_EQ(t->server_count(), 8u * 8);
  std::set<std::int64_t> host, fabric;
  for (LinkId l = 0; l < t->links.size(); ++l) {
    const bool to_server =
        t->is_server(t->ports[t->links[l].a].node) || t->is_server(t->ports[t->links[l].b].node);
    (to_server ? host : fabric).insert(gbps(*t, l));
  }
  EXPECT_EQ(host, std::set<std::int64_t>{200});
  EXPECT_EQ(fabric, std::set<std::int64_t>{400});
  for (const TierLoad& load : tier_loads(*t)) {
    if (load.tier == 1) {
      EXPECT_EQ(load.down, load.up) << "8 x 200G down, 4 x 400G up";
    }
  }
}

TEST(ClosFeatures, BadInputsNameTheKeyAndWhatIsAllowed) {
  std::string e =
      build_error("fat_tree", {{"k", "8"}, {"gpus_per_server", "8"}, {"nics_per_server", "3"}});
  EXPECT_NE(e.find("topology.nics_per_server: 3 does not divide gpus_per_server 8"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("allowed: 1, 2, 4, 8"), std::string::npos) << e;
  e = build_error("fat_tree", {{"k", "8"}, {"tiers", "2"}, {"spine_oversubscription", "3"}});
  EXPECT_NE(e.find("topology.spine_oversubscription: 3 needs tiers: 3"), std::string::npos) << e;
  e = build_error("fat_tree", {{"k", "8"}, {"spine_oversubscription", "2"}});
  EXPECT_NE(e.find("topology.spine_oversubscription: 2 needs k divisible by 3"), std::string::npos)
      << e;
  // 8 NICs on pods of 4 leaves: a rail group would straddle pods.
  e = build_error("fat_tree", {{"k", "8"}, {"gpus_per_server", "8"}, {"nics_per_server", "8"}});
  EXPECT_NE(e.find("topology.nics_per_server: 8 NICs per server go to 8 leaves"), std::string::npos)
      << e;
  e = build_error("rail_optimized",
                  {{"servers", "2"}, {"gpus_per_server", "4"}, {"nics_per_server", "8"}});
  EXPECT_NE(e.find("topology.nics_per_server: 8 does not divide gpus_per_server 4"),
            std::string::npos)
      << e;
}

TEST(ClosFeatures, ShippedMegaScaleShape) {
  // topologies/megascale-12k.yaml: MegaScale (NSDI 2024) section 3.4 -- Tomahawk 4 (64 x 400G),
  // 3 tiers at 1:1, ToR downlinks split into 2 x 200G, 8 NICs on 8 ToRs, 64 servers per ToR
  // set; 12,288 GPUs.
  const auto t = load_topology(STEPSIM_SOURCE_DIR "/topologies/megascale-12k.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->gpu_count(), 12'288u);
  EXPECT_EQ(t->server_count(), 1536u);
  EXPECT_EQ(t->nic_count(), 1536u * 8);
  EXPECT_EQ(switches_in_tier(*t, 1), 192u);  // 6 pods x 32 ToRs
  EXPECT_EQ(switches_in_tier(*t, 2), 192u);  // 6 pods x 32 spines
  for (NodeId v = 0; v < t->nodes.size(); ++v) {
    const Node& n = t->nodes[v];
    if (n.tier == 1) {
      EXPECT_EQ(links_to_tier(*t, v, 0), 64u);
      EXPECT_EQ(links_to_tier(*t, v, 2), 32u);
    }
    if (n.tier == 2) {
      EXPECT_EQ(links_to_tier(*t, v, 1), 32u);
      EXPECT_EQ(links_to_tier(*t, v, 3), 32u);
    }
    if (n.kind == NodeKind::kServer) {
      std::set<NodeId> tors;
      for (const Port& p : t->ports_of(v)) tors.insert(t->ports[p.peer].node);
      EXPECT_EQ(tors.size(), 8u) << "server " << v;
      for (const Port& p : t->ports_of(v)) EXPECT_EQ(gbps(*t, p.link), 200);
    }
  }
  for (const TierLoad& load : tier_loads(*t)) {
    if (load.tier == 1 || load.tier == 2) {
      EXPECT_EQ(load.down, load.up) << int{load.tier};
    }
  }
  const Bisection b = bisection(*t);
  EXPECT_EQ(b.capacity, b.injection) << "non-blocking at every tier";
}

}  // namespace
}  // namespace stepsim::topology
