#include "stepsim/fabric/valiant_detour.hpp"

#include "stepsim/core/fatal.hpp"

namespace stepsim::fabric {

ValiantDetour::ValiantDetour(const topology::Topology& topo, const Routing& routing)
    : topo_(topo), routing_(routing) {
  // Packet::via holds an edge index in 16 bits (kNoDetour excluded).
  STEPSIM_CHECK(routing_.edge_switches() < kNoDetour,
                "valiant routing: more than 65534 edge switches do not fit Packet::via");
  for (topology::NodeId v = 0; v < topo_.nodes.size(); ++v) {
    if (topo_.is_server(v) || routing_.edge_index(v) == topology::kNone) continue;
    const std::uint32_t g = topo_.nodes[v].group;
    if (routers_by_group_.size() <= g) routers_by_group_.resize(g + 1);
    routers_by_group_[g].push_back(static_cast<std::uint16_t>(routing_.edge_index(v)));
  }
}

void ValiantDetour::choose(topology::NodeId self, Packet& pkt, pdes::Rng& rng) const {
  const std::uint32_t src_group = topo_.nodes[self].group;
  const std::uint32_t dst_group = topo_.nodes[routing_.edge_of_nic(pkt.dst_nic)].group;
  const auto groups = static_cast<std::uint32_t>(routers_by_group_.size());
  if (src_group == dst_group || groups < 3) return;
  std::uint32_t g;
  do {
    g = rng.below(groups);
  } while (g == src_group || g == dst_group || routers_by_group_[g].empty());
  const auto& routers = routers_by_group_[g];
  pkt.via = routers[rng.below(static_cast<std::uint32_t>(routers.size()))];
}

}  // namespace stepsim::fabric
