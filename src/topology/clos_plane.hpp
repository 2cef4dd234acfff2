#pragma once
// One folded-Clos plane (leaf/spine[/core]) of switches of one radix, shared by the fat_tree
// and rail_optimized generators. Private to src/topology/.

#include <cstdint>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// Shape of a plane: radix R; leaves split R into `down` server ports and `up` spine ports
/// (down:up = the oversubscription); 3-tier pods hold R/2 leaves and `up` spines, and spines
/// split R into R/2 down and R/2 up.
struct ClosShape {
  std::uint32_t radix = 0;
  int tiers = 3;
  std::uint32_t down = 0;
  std::uint32_t up = 0;

  /// Servers a fully built plane holds: R x down (2 tiers), R x R/2 x down (3 tiers).
  [[nodiscard]] std::uint64_t capacity() const;
  /// Leaves per pod (3 tiers: R/2); 2 tiers: one pod of up to R leaves.
  [[nodiscard]] std::uint32_t leaves_per_pod() const { return tiers == 3 ? radix / 2 : radix; }
  /// Pod of a server (0 in a 2-tier plane).
  [[nodiscard]] std::uint32_t pod_of(std::uint32_t server) const {
    return tiers == 3 ? server / (down * leaves_per_pod()) : 0;
  }
};

/// Reads `radix_key`, "tiers" and "oversubscription" from `params` and checks that the radix
/// is even and divisible by oversubscription + 1.
Result<ClosShape> make_clos_shape(const GeneratorParams& params, const std::string& radix_key);

/// Checks `servers_key` against the plane's capacity (absent: the full capacity) and returns
/// the number of servers to build. `what` names the fabric in the message.
Result<std::uint32_t> clos_servers(const GeneratorParams& params, const ClosShape& shape,
                                   const std::string& what);

/// The link specs of one plane, indexed like the generators' link classes.
struct ClosLinks {
  LinkSpec server_leaf;
  LinkSpec leaf_spine;
  LinkSpec spine_core;
};

/// Builds one plane over servers [0, servers) (nodes that already exist): port `nic` of each
/// server goes to a leaf, `down` servers per leaf in id order. Adds leaves, then spines (pod by
/// pod), then cores (column by column), with Node::plane = `plane`, tier 1/2/3 and
/// Node::group = pod (cores: the spine column they serve). Only switches that carry traffic
/// are built: one leaf needs no spine, one pod no core. Where fewer pods than the radix allows
/// exist, spine uplinks are bundled: a 2-tier plane gets the fewest spines (a divisor of `up`)
/// with enough ports, each leaf sending up/spines parallel links to each; a 3-tier column gets
/// the fewest cores (a divisor of R/2) with enough ports, each spine sending R/2/cores links to
/// each. At full population this is exactly the k-ary fat-tree of Al-Fares et al.
void build_clos_plane(Topology& topo, const ClosShape& shape, std::uint32_t servers,
                      std::uint32_t nic, std::uint16_t plane, const ClosLinks& links);

}  // namespace stepsim::topology
