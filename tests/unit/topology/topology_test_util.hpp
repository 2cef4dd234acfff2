#pragma once
// Helpers for the topology tests: build a topology from a few parameters, and check its wiring
// independently of the library's own find_wiring_error().

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "stepsim/topology/topology.hpp"
#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::topology::testing {

/// Builds a topology of `kind` with generator parameters `params` and 400G links; fails the
/// test (and returns an empty topology) on an error.
inline Topology build(const std::string& kind, const std::map<std::string, std::string>& params,
                      const std::string& port = "400G") {
  TopologySpec spec;
  spec.kind = kind;
  spec.port = port;
  spec.params = params;
  auto t = generate_topology(spec);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

/// The error message of a spec that must not build.
inline std::string build_error(const std::string& kind,
                               const std::map<std::string, std::string>& params) {
  TopologySpec spec;
  spec.kind = kind;
  spec.port = "400G";
  spec.params = params;
  const auto t = generate_topology(spec);
  EXPECT_FALSE(t.ok()) << kind << " built although it should not";
  return t.ok() ? "" : t.error().message;
}

/// Every port's peer has it as peer, over the same link, and the link joins exactly those two
/// ports; every link is recorded at both ends; no server is cabled to a server.
inline void expect_consistent_wiring(const Topology& topo) {
  std::size_t cabled_ports = 0;
  for (PortId p = 0; p < topo.ports.size(); ++p) {
    const Port& port = topo.ports[p];
    ASSERT_LT(port.node, topo.nodes.size());
    ASSERT_EQ(topo.port_id(port.node, port.index), p);
    if (port.link == kNone) {
      ASSERT_EQ(port.peer, kNone);
      continue;
    }
    ++cabled_ports;
    ASSERT_LT(port.peer, topo.ports.size());
    const Port& peer = topo.ports[port.peer];
    ASSERT_EQ(peer.peer, p) << "peer of the peer of port " << p;
    ASSERT_EQ(peer.link, port.link);
    const Link& l = topo.links[port.link];
    ASSERT_TRUE((l.a == p && l.b == port.peer) || (l.b == p && l.a == port.peer));
    ASSERT_NE(port.node, peer.node);
    ASSERT_FALSE(topo.is_server(port.node) && topo.is_server(peer.node));
  }
  EXPECT_EQ(cabled_ports, 2 * topo.links.size());
}

/// Switches of a tier.
inline std::size_t switches_in_tier(const Topology& topo, std::uint8_t tier) {
  std::size_t n = 0;
  for (const Node& x : topo.nodes) n += x.kind == NodeKind::kSwitch && x.tier == tier ? 1 : 0;
  return n;
}

/// Cabled ports of node `v` whose peer is in `tier`.
inline std::size_t links_to_tier(const Topology& topo, NodeId v, std::uint8_t tier) {
  std::size_t n = 0;
  for (const Port& p : topo.ports_of(v)) {
    if (p.link != kNone && topo.nodes[topo.ports[p.peer].node].tier == tier) ++n;
  }
  return n;
}

/// The node at the other end of port `index` of node `v`.
inline NodeId peer_node(const Topology& topo, NodeId v, std::uint32_t index) {
  return topo.ports[topo.ports_of(v)[index].peer].node;
}

}  // namespace stepsim::topology::testing
