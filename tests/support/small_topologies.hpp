#pragma once
// Hand-built topologies for fabric tests (independent of the YAML generators).

#include <cstdint>

#include "stepsim/phy/port_rate.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::testing {

/// `leaves` leaf switches with `hosts` single-NIC servers each, every leaf cabled to every one of
/// `spines` spines. Server ids first (leaf by leaf), then leaves, then spines.
inline topology::Topology leaf_spine(std::uint32_t leaves, std::uint32_t spines,
                                     std::uint32_t hosts, const char* port = "400G") {
  using topology::CableKind;
  using topology::NodeKind;
  topology::Topology t;
  t.name = "leaf-spine";
  t.generator = "test";
  t.port_types.push_back(phy::standard_port(port).value());
  for (std::uint32_t l = 0; l < leaves; ++l) {
    for (std::uint32_t h = 0; h < hosts; ++h) t.add_node(NodeKind::kServer, 0, 1, l, 0, 1);
  }
  const topology::NodeId first_leaf = static_cast<topology::NodeId>(t.nodes.size());
  for (std::uint32_t l = 0; l < leaves; ++l) t.add_node(NodeKind::kSwitch, 1, hosts + spines, l);
  const topology::NodeId first_spine = static_cast<topology::NodeId>(t.nodes.size());
  for (std::uint32_t s = 0; s < spines; ++s) t.add_node(NodeKind::kSwitch, 2, leaves);
  for (std::uint32_t l = 0; l < leaves; ++l) {
    for (std::uint32_t h = 0; h < hosts; ++h) {
      t.connect(l * hosts + h, 0, first_leaf + l, h, 0, CableKind::kDac, Length::m(2));
    }
    for (std::uint32_t s = 0; s < spines; ++s) {
      t.connect(first_leaf + l, hosts + s, first_spine + s, l, 0, CableKind::kAoc, Length::m(20));
    }
  }
  return t;
}

}  // namespace stepsim::testing
