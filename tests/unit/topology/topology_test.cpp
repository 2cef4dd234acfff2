#include "stepsim/topology/topology.hpp"

#include <gtest/gtest.h>

#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::topology {
namespace {

Topology two_servers_one_switch() {
  Topology t;
  t.port_types.push_back(phy::standard_port("400G").value());
  t.link_classes = {"server_leaf"};
  t.add_node(NodeKind::kServer, 0, 2, 0, 0, 8);
  t.add_node(NodeKind::kServer, 0, 2, 0, 0, 8);
  t.add_node(NodeKind::kSwitch, 1, 4);
  LinkSpec spec;
  spec.cable = CableKind::kAoc;
  spec.length = Length::m(10);
  spec.ber = 1e-9;
  t.connect(0, 0, 2, 0, spec);
  t.connect(1, 1, 2, 3, spec);
  return t;
}

TEST(Topology, CableLatencyIsPropagationPlusPhyPlusTwoDspForOptics) {
  const PhyParams phy;
  EXPECT_EQ(cable_latency(phy, CableKind::kDac, Length::m(3)), SimTime::ps(3 * 4300 + 100'000));
  EXPECT_EQ(cable_latency(phy, CableKind::kAoc, Length::m(30)), SimTime::ps(30 * 4900 + 100'000));
  EXPECT_EQ(cable_latency(phy, CableKind::kOptics, Length::m(100)),
            SimTime::ps(100 * 4900 + 100'000 + 2 * 125'000));
}

TEST(Topology, ConnectWithLinkSpecCablesBothEndsAndKeepsTheClass) {
  const Topology t = two_servers_one_switch();
  ASSERT_EQ(t.links.size(), 2u);
  EXPECT_EQ(t.links[1].link_class, 0);
  EXPECT_EQ(t.links[1].cable, CableKind::kAoc);
  EXPECT_EQ(t.links[1].ber, 1e-9);
  EXPECT_EQ(t.links[1].latency, SimTime::ps(10 * 4900 + 100'000));
  EXPECT_EQ(t.ports[t.port_id(1, 1)].peer, t.port_id(2, 3));
  EXPECT_EQ(t.ports[t.port_id(2, 3)].peer, t.port_id(1, 1));
  EXPECT_EQ(t.server_count(), 2u);
  EXPECT_EQ(t.switch_count(), 1u);
  EXPECT_EQ(t.gpu_count(), 16u);
  EXPECT_EQ(t.nic_count(), 2u);  // two of the four server ports are cabled
  EXPECT_EQ(t.link_class_name(0), "server_leaf");
  EXPECT_EQ(t.link_class_name(7), "class 7");
  EXPECT_EQ(t.tier_name(1), "tier 1");
}

TEST(Topology, LpGraphHasOneLpPerNodeAndTheSmallestLatencyAsLookahead) {
  Topology t = two_servers_one_switch();
  LinkSpec dac;
  dac.length = Length::m(1);
  t.add_node(NodeKind::kSwitch, 2, 2);
  t.connect(2, 1, 3, 0, dac);
  const pdes::LpGraph g = t.lp_graph();
  EXPECT_EQ(g.size(), 4u);
  EXPECT_EQ(g.edge_count(), 3u);
  EXPECT_EQ(g.min_latency(), SimTime::ps(4300 + 100'000));
}

TEST(Topology, WiringCheckFindsABrokenPeer) {
  Topology t = two_servers_one_switch();
  EXPECT_EQ(find_wiring_error(t), "");
  t.ports[t.port_id(2, 3)].peer = t.port_id(0, 0);
  EXPECT_NE(find_wiring_error(t).find("disagree"), std::string::npos) << find_wiring_error(t);
}

TEST(Topology, WiringCheckFindsServerToServerCables) {
  Topology t = two_servers_one_switch();
  t.connect(0, 1, 1, 0, LinkSpec{});
  EXPECT_NE(find_wiring_error(t).find("cabled to server"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::topology
