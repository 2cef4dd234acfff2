#include "stepsim/fabric/valiant_detour.hpp"

#include <gtest/gtest.h>

#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::fabric {
namespace {

using topology::NodeId;

topology::Topology dragonfly() {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) +
                                 "/topologies/dragonfly-small.yaml")
      .value();
}

// The first NIC cabled to switch `sw`.
topology::PortId nic_at(const topology::Topology& topo, const Routing& routing, NodeId sw) {
  for (topology::PortId p = 0; p < topo.ports.size(); ++p) {
    if (topo.is_server(topo.ports[p].node) && routing.edge_of_nic(p) == sw) return p;
  }
  return topology::kNone;
}

TEST(DragonflyRouting, MinimalRoutesTakeOneGlobalHop) {
  // Kim et al.'s minimal route is local, global, local: a global link is a candidate only when
  // one of its ends is in the destination's group.
  const auto topo = dragonfly();
  const Routing routing(topo);
  int globals = 0;
  for (NodeId s = 0; s < topo.nodes.size(); ++s) {
    if (topo.is_server(s)) continue;
    for (topology::PortId nic = 0; nic < topo.ports.size(); ++nic) {
      if (!topo.is_server(topo.ports[nic].node) || topo.ports[nic].link == topology::kNone)
        continue;
      const std::uint32_t dst_group = topo.nodes[routing.edge_of_nic(nic)].group;
      for (std::uint32_t c : routing.candidates(s, nic)) {
        const NodeId w = routing.port(topo.port_id(s, c)).peer_node;
        if (topo.nodes[w].group == topo.nodes[s].group) continue;
        ++globals;
        EXPECT_TRUE(topo.nodes[s].group == dst_group || topo.nodes[w].group == dst_group)
            << "switch " << s << " -> " << w << " toward group " << dst_group;
      }
    }
  }
  EXPECT_GT(globals, 0);
}

TEST(VirtualLane, RisesAtTheGlobalHopAndAtTheIntermediate) {
  const auto topo = dragonfly();
  const Routing routing(topo);
  // Routers of groups 0 (source), 1 (intermediate) and 2 (destination).
  NodeId r[3] = {topology::kNone, topology::kNone, topology::kNone};
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    const std::uint32_t g = topo.nodes[v].group;
    if (!topo.is_server(v) && g < 3 && r[g] == topology::kNone) r[g] = v;
  }
  const topology::PortId dst = nic_at(topo, routing, r[2]);
  ASSERT_NE(dst, topology::kNone);
  ASSERT_NE(routing.edge_index(r[1]), topology::kNone);
  const auto via = static_cast<std::uint16_t>(routing.edge_index(r[1]));  // Packet::via
  EXPECT_EQ(routing.edge_switch(via), r[1]);
  EXPECT_EQ(virtual_lane(topo, routing, via, r[0], dst), 0);        // toward the intermediate
  EXPECT_EQ(virtual_lane(topo, routing, via, r[1], dst), 1);        // in its group
  EXPECT_EQ(virtual_lane(topo, routing, kNoDetour, r[1], dst), 2);  // detour done
  EXPECT_EQ(virtual_lane(topo, routing, kNoDetour, r[2], dst), 3);  // in the destination group
  EXPECT_EQ(virtual_lane(topo, routing, kNoDetour, r[0], dst), 2);  // minimal route
}

TEST(VirtualLane, NeverFallsAlongAnyValiantPath) {
  // Every hop of every route from a source router via an intermediate to a destination keeps or
  // raises the lane, and a global hop always raises it: no cycle of PAUSE can close.
  const auto topo = dragonfly();
  const Routing routing(topo);
  int paths = 0;
  for (NodeId src = 0; src < topo.nodes.size(); src += 5) {
    for (NodeId via = 1; via < topo.nodes.size(); via += 7) {
      if (topo.is_server(src) || topo.is_server(via) || routing.edge_index(via) == topology::kNone)
        continue;
      for (topology::PortId dst = 0; dst < topo.ports.size(); dst += 11) {
        if (!topo.is_server(topo.ports[dst].node) || topo.ports[dst].link == topology::kNone)
          continue;
        const std::uint32_t gs = topo.nodes[src].group;
        const std::uint32_t gv = topo.nodes[via].group;
        const std::uint32_t gd = topo.nodes[routing.edge_of_nic(dst)].group;
        if (gs == gv || gv == gd || gs == gd) continue;
        ++paths;
        NodeId at = src;
        // Packet::via: the intermediate's edge index until it is reached.
        auto detour = static_cast<std::uint16_t>(routing.edge_index(via));
        auto reached = [&](NodeId v, std::uint16_t d) {
          return d != kNoDetour && routing.edge_switch(d) == v;
        };
        int lane = virtual_lane(topo, routing, detour, at, dst);
        for (int hop = 0; hop < 12 && at != routing.edge_of_nic(dst); ++hop) {
          if (reached(at, detour)) detour = kNoDetour;
          const auto cand = detour != kNoDetour
                                ? routing.candidates_at(routing.switch_index(at), detour)
                                : routing.candidates(at, dst);
          ASSERT_FALSE(cand.empty());
          const int out = virtual_lane(topo, routing, detour, at, dst);
          EXPECT_GE(out, lane);
          const NodeId next = routing.port(topo.port_id(at, cand[0])).peer_node;
          if (topo.nodes[next].group != topo.nodes[at].group) {
            // The downstream switch's lane after a global hop is higher than the hop's own.
            const std::uint16_t d = reached(next, detour) ? kNoDetour : detour;
            EXPECT_GT(virtual_lane(topo, routing, d, next, dst), out);
          }
          lane = out;
          at = next;
        }
        EXPECT_EQ(at, routing.edge_of_nic(dst));
      }
    }
  }
  EXPECT_GT(paths, 10);
}

}  // namespace
}  // namespace stepsim::fabric
