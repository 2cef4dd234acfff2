#pragma once
// Valiant routing on a dragonfly (Valiant & Brebner 1981, as in Kim et al., ISCA 2008): at the
// source router, a packet bound for another group picks a random router of a third group as its
// intermediate, goes there minimally, then minimally to its destination. Spreads adversarial
// traffic over all global links at the cost of up to twice the hops. Simplification: the
// intermediate is drawn per packet (not per flow), uniformly over groups, then routers.

#include <cstdint>
#include <vector>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/pdes/rng.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// The choice of a Valiant intermediate router.
class ValiantDetour {
 public:
  ValiantDetour(const topology::Topology& topo, const Routing& routing);
  /// At the source router `self`: sets pkt.via to a random edge router of a group that is neither
  /// the source's nor the destination's (leaves it unset when only two groups exist or both ends
  /// share a group).
  void choose(topology::NodeId self, Packet& pkt, pdes::Rng& rng) const;

 private:
  const topology::Topology& topo_;
  const Routing& routing_;
  std::vector<std::vector<topology::NodeId>> routers_by_group_;  // edge switches by group
};

}  // namespace stepsim::fabric
