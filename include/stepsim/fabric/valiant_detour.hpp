#pragma once
// Valiant routing on a dragonfly (Valiant & Brebner 1981, as in Kim et al., ISCA 2008): at the
// source router, a packet bound for another group picks a random router of a third group as its
// intermediate, goes there minimally, then minimally to its destination. Spreads adversarial
// traffic over all global links at the cost of up to twice the hops. Simplification: the
// intermediate is drawn per packet (not per flow), uniformly over groups, then routers.
// Virtual lanes keep the lossless class deadlock-free under PFC (docs/fabric.md): the lane rises
// at every global hop and at the intermediate, so the channel dependency graph is acyclic.

#include <cstdint>
#include <vector>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/pdes/rng.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// Lossless virtual lanes on a dragonfly: 0 and 1 on the way to the Valiant intermediate (before
/// and after the global hop into its group), 2 and 3 on the way to the destination (minimal
/// routes use only these two).
inline constexpr int kVirtualLanes = 4;

/// The lane a lossless packet takes out of switch `at`: it follows from where the packet is and
/// where it is bound (`via`: the edge index of its Valiant intermediate, or kNoDetour); minimal
/// routes take one global hop (routing.cpp), which is what makes this exact. The switch writes it
/// into Packet::lane, so the switch downstream knows the lane the packet came in on.
[[nodiscard]] inline std::uint8_t virtual_lane(const topology::Topology& topo,
                                               const Routing& routing, std::uint16_t via,
                                               topology::NodeId at, topology::PortId dst_nic) {
  const std::uint32_t group = topo.nodes[at].group;
  if (via != kNoDetour) return group == topo.nodes[routing.edge_switch(via)].group ? 1 : 0;
  return group == topo.nodes[routing.edge_of_nic(dst_nic)].group ? 3 : 2;
}

/// The choice of a Valiant intermediate router.
class ValiantDetour {
 public:
  ValiantDetour(const topology::Topology& topo, const Routing& routing);
  /// At the source router `self`: sets pkt.via to the edge index of a random edge router of a
  /// group that is neither the source's nor the destination's (leaves it unset when only two
  /// groups exist or both ends share a group).
  void choose(topology::NodeId self, Packet& pkt, pdes::Rng& rng) const;

 private:
  const topology::Topology& topo_;
  const Routing& routing_;
  std::vector<std::vector<std::uint16_t>> routers_by_group_;  // edge indices by group
};

}  // namespace stepsim::fabric
