#pragma once
// The incast that several RDMA tests run on leaf_spine(1, 1, senders + 1): hosts 1..senders each
// connected to host 0, every connection with its own entropy (UDP source port 50000 + i), so the
// receiving host's port is the one bottleneck.

#include <cstdint>
#include <vector>

#include "stepsim/nic/verbs.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::testing {

/// Connection i from host i + 1 (its port 0) to host 0 (port 0), for i in [0, senders).
inline std::vector<nic::Connection> incast_connections(const topology::Topology& topo,
                                                       int senders) {
  std::vector<nic::Connection> conns;
  for (int i = 0; i < senders; ++i) {
    nic::Connection c;
    c.a = topo.port_id(static_cast<topology::NodeId>(i + 1), 0);
    c.b = topo.port_id(0, 0);
    c.entropy = static_cast<std::uint16_t>(50000 + i);
    conns.push_back(c);
  }
  return conns;
}

}  // namespace stepsim::testing
