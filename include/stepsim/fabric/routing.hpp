#pragma once
/// Minimal (shortest-path) routing over the switch graph: at every switch, for every edge switch
/// (a switch with servers), the set of equal-cost egress ports. On fat-trees this is up/down
/// routing (any up port while the destination is not below, the one down port after); on
/// dragonflies minimal routing. Built identically on every rank.

#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/pdes/lp_graph.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// Per-port facts the packet path needs, flattened for speed (indexed by global PortId).
struct PortInfo {
  topology::NodeId peer_node = topology::kNone;  ///< node at the other end
  std::uint32_t peer_index = 0;                  ///< port index within that node
  topology::LinkId link = topology::kNone;
  SimTime latency;  ///< one-way link latency
  DataRate rate;    ///< data rate of the link
  bool peer_is_switch = false;
};

class Routing {
 public:
  explicit Routing(const topology::Topology& topo);

  /// Equal-cost egress ports (indices within `sw`) towards the edge switch of `dst_nic`; empty if
  /// `sw` is that edge switch (use nic_port_at_edge) or the destination is unreachable.
  [[nodiscard]] std::span<const std::uint32_t> candidates(topology::NodeId sw,
                                                          topology::PortId dst_nic) const {
    const std::uint32_t e = edge_index_[edge_of_nic_[dst_nic]];
    const Entry& x = table_[static_cast<std::size_t>(switch_index_[sw]) * edges_ + e];
    return {ports_.data() + x.offset, x.count};
  }
  /// Dense index of a switch (kNone for servers), and of an edge switch among edge switches.
  [[nodiscard]] std::uint32_t switch_index(topology::NodeId sw) const { return switch_index_[sw]; }
  [[nodiscard]] std::uint32_t edge_index(topology::NodeId sw) const { return edge_index_[sw]; }
  /// The edge switch of dense edge index `e`.
  [[nodiscard]] topology::NodeId edge_switch(std::uint32_t e) const { return edge_nodes_[e]; }
  /// Edge index of the switch a NIC is cabled to.
  [[nodiscard]] std::uint32_t edge_index_of_nic(topology::PortId nic) const {
    return edge_index_of_nic_[nic];
  }
  /// candidates() by dense indices (the fast path of a switch that knows its own index).
  [[nodiscard]] std::span<const std::uint32_t> candidates_at(std::uint32_t switch_index,
                                                             std::uint32_t edge_index) const {
    const Entry& x = table_[static_cast<std::size_t>(switch_index) * edges_ + edge_index];
    return {ports_.data() + x.offset, x.count};
  }
  /// The edge switch a NIC is cabled to.
  [[nodiscard]] topology::NodeId edge_of_nic(topology::PortId nic) const {
    return edge_of_nic_[nic];
  }
  /// The port index, on the NIC's edge switch, that leads to the NIC.
  [[nodiscard]] std::uint32_t nic_port_at_edge(topology::PortId nic) const {
    return nic_port_at_edge_[nic];
  }
  /// Switch hops from switch `sw` to the edge switch of `dst_nic` (0 at the edge switch).
  [[nodiscard]] std::uint32_t distance(topology::NodeId sw, topology::PortId dst_nic) const;
  [[nodiscard]] const PortInfo& port(topology::PortId p) const { return port_info_[p]; }
  [[nodiscard]] std::size_t edge_switches() const { return edges_; }
  /// Bytes held by the tables.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  /// One BFS per edge switch: the distances and the equal-cost ports of every switch.
  void build_table(const topology::Topology& topo, const std::vector<topology::NodeId>& switches,
                   const std::vector<topology::NodeId>& edges);
  struct Entry {
    std::uint32_t offset;
    std::uint16_t count;
    std::uint16_t distance;
  };
  std::size_t edges_ = 0;
  std::vector<std::uint32_t> switch_index_;       // by node: dense switch index
  std::vector<std::uint32_t> edge_index_;         // by node: dense edge-switch index
  std::vector<topology::NodeId> edge_nodes_;      // by edge index: the edge switch
  std::vector<topology::NodeId> edge_of_nic_;     // by PortId (server ports only)
  std::vector<std::uint32_t> edge_index_of_nic_;  // by PortId (server ports only)
  std::vector<std::uint32_t> nic_port_at_edge_;   // by PortId (server ports only)
  std::vector<Entry> table_;                      // switches x edges
  std::vector<std::uint32_t> ports_;
  std::vector<PortInfo> port_info_;
};

/// The LP graph of `topo` (one LP per server and switch, one edge per cable) weighted by the
/// traffic expected between the NIC pairs `pairs` (each pair both ways, one unit each): a pair's
/// unit is spread over its equal-cost paths, an equal share per candidate port at every switch.
/// An edge weighs 1 + what its link carries, an LP 1 + what passes through it, in 1/1024 units,
/// so METIS balances the busy LPs (idle servers weigh 1) and keeps busy links inside a rank.
pdes::LpGraph traffic_lp_graph(
    const topology::Topology& topo, const Routing& routing,
    std::span<const std::pair<topology::PortId, topology::PortId>> pairs);

}  // namespace stepsim::fabric
