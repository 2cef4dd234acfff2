#pragma once
// One folded-Clos plane (leaf/spine[/core]) of switches of one radix, shared by the fat_tree
// and rail_optimized generators. Private to src/topology/.

#include <cstdint>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// Shape of a plane: radix R; leaves split R into `down_ports` server-side ports and `up` spine
/// ports (down:up = the leaf oversubscription), each server-side port broken out into `breakout`
/// server ports, so a leaf takes `down` = down_ports x breakout server links; 3-tier spines split
/// R into `spine_down` leaf ports and `spine_up` core ports (the spine oversubscription). A pod
/// holds `spine_down` leaves and `up` spines; cores have R ports, one bundle per pod. `rails`
/// NICs of each server go into the plane, each to its own leaf of the server's rail group of
/// `rails` consecutive leaves (MegaScale's multi-rail ToRs; 1: one NIC per server).
struct ClosShape {
  std::uint32_t radix = 0;
  int tiers = 3;
  std::uint32_t down_ports = 0;
  std::uint32_t breakout = 1;
  std::uint32_t down = 0;
  std::uint32_t up = 0;
  std::uint32_t spine_down = 0;
  std::uint32_t spine_up = 0;
  std::uint32_t rails = 1;

  /// Servers a fully built plane holds: rail groups (R / rails at 2 tiers; R pods of
  /// spine_down / rails at 3 tiers) x down.
  [[nodiscard]] std::uint64_t capacity() const;
  /// Leaves per pod (3 tiers: spine_down); 2 tiers: one pod of up to R leaves.
  [[nodiscard]] std::uint32_t leaves_per_pod() const { return tiers == 3 ? spine_down : radix; }
  /// Pod of a server (0 in a 2-tier plane).
  [[nodiscard]] std::uint32_t pod_of(std::uint32_t server) const {
    return tiers == 3 ? server / down * rails / leaves_per_pod() : 0;
  }
};

/// A Clos generator's checked parameters: the servers' GPUs and NICs, how many servers, and the
/// shape of a plane (fat_tree: one plane; rail_optimized: one per NIC).
struct ClosPlan {
  std::uint32_t gpus = 0, nics = 0, servers = 0;
  ClosShape shape;
};

/// Reads `radix_key`, "tiers", "oversubscription", "spine_oversubscription" and
/// "leaf_breakout" from `params` (the last two optional), with `rails` NICs per server in the
/// plane, and checks that the radix is even and divisible by each oversubscription + 1, that a
/// 2-tier plane has no spine oversubscription, and that the rail groups fill pods evenly.
Result<ClosShape> make_clos_shape(const GeneratorParams& params, const std::string& radix_key,
                                  std::uint32_t rails = 1, const std::string& rails_key = "");

/// Checks that `nics` (parameter nics_per_server) divides `gpus` (gpus_per_server): GPUs
/// reach NICs in equal blocks behind PCIe switches.
Result<bool> check_nics(const GeneratorParams& params, std::uint32_t gpus, std::uint32_t nics);

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

/// leaf_breakout b splits one leaf port (the leaf's fabric port: `leaf_spine`'s type) into b
/// server legs: each leg (`server_leaf`'s port) may carry at most 1/b of it.
Result<bool> check_breakout(const GeneratorParams& params, const ClosShape& shape,
                            const Topology& topo, const ClosLinks& links);

/// Builds one plane over servers [0, servers) (nodes that already exist): ports `nic` ..
/// `nic` + rails - 1 of each server go to the leaves of its rail group, `down` servers per group
/// in id order (NIC nic + i to leaf i of the group). Adds leaves, then spines (pod by pod), then
/// cores (column by column), with Node::plane = `plane`, tier 1/2/3 and Node::group = pod
/// (cores: the spine column they serve). Only switches that carry traffic are built: one leaf
/// needs no spine, one pod no core. Where fewer pods than the radix allows exist, spine uplinks
/// are bundled: a 2-tier plane gets the fewest spines (a divisor of `up`) with enough ports,
/// each leaf sending up/spines parallel links to each; a 3-tier column gets the fewest cores (a
/// divisor of spine_up) with enough ports, each spine sending spine_up/cores links to each. At
/// full population with one rail, no breakout and no spine oversubscription this is exactly the
/// k-ary fat-tree of Al-Fares et al.
void build_clos_plane(Topology& topo, const ClosShape& shape, std::uint32_t servers,
                      std::uint32_t nic, std::uint16_t plane, const ClosLinks& links);

/// What build_clos_plane adds: its switches (`edge_switches` its leaves), their ports and the
/// links, the servers' links to the leaves included (the servers' own nodes and ports not).
TopologyCounts clos_plane_counts(const ClosShape& shape, std::uint32_t servers);

}  // namespace stepsim::topology
