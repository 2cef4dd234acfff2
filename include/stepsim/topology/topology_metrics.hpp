#pragma once
/// Whole-topology figures for `stepsim check` and the tests: capacity per tier, link classes,
/// bisection bandwidth, diameter.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/units.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// The switches of one tier and the capacity of their links, counted at the switch end.
struct TierLoad {
  std::uint8_t tier = 0;
  std::size_t switches = 0;
  DataRate down;    ///< links to lower tiers (servers, leaves)
  DataRate up;      ///< links to higher tiers
  DataRate local;   ///< links inside the tier and group (dragonfly local links)
  DataRate global;  ///< links inside the tier to other groups (dragonfly global links)
};

/// One TierLoad per switch tier present, in tier order.
std::vector<TierLoad> tier_loads(const Topology& topo);

/// The links of one class (Link::link_class).
struct LinkClassStats {
  std::uint8_t link_class = 0;
  std::size_t links = 0;
  std::vector<CableKind> cables;   ///< distinct cable kinds, in first-seen order
  std::vector<std::string> ports;  ///< distinct port type names, in first-seen order
  Length min_length, max_length;
  SimTime min_latency, max_latency;
  DataRate capacity;  ///< summed one-direction rate
};

/// One entry per link class that has links, in class order.
std::vector<LinkClassStats> link_class_stats(const Topology& topo);

/// Bisection bandwidth of the split "first half of the servers by id | the rest". Generators
/// number servers in locality order, so the split follows pods and groups. Computed as the
/// smallest of a family of cuts: "this half's servers plus its own switches (those with
/// servers of this half only below them) up to tier t", minimised over t separately in every
/// plane and summed over planes (planes only meet at the servers), then the smaller of the two
/// halves. Every member of the family is a real cut, so the result is an upper bound on the
/// max-flow between the halves; it equals it for fat-trees and rail planes whose halves are whole
/// pods (3 tiers) or whole leaves (2 tiers), which the full shipped files are.
struct Bisection {
  std::size_t first_half = 0;  ///< servers in the first half
  DataRate capacity;           ///< the smallest cut found, one direction
  DataRate injection;          ///< the servers' own links (the cut at tier 0)
};
Bisection bisection(const Topology& topo);

/// Longest shortest path between two servers, in links (server-switch-...-server), over
/// switches only (servers do not forward). Breadth-first search from one server of each group
/// of servers that share the same switches.
struct Diameter {
  std::uint32_t links = 0;
  bool connected = true;  ///< false when some pair of servers cannot reach each other
  bool computed = true;   ///< false when the search would exceed kDiameterWorkLimit
};
/// Most port visits server_diameter() makes (groups of alike servers x ports), ~10 s.
inline constexpr double kDiameterWorkLimit = 2e9;
Diameter server_diameter(const Topology& topo);

/// Number of switch planes (1 + the largest Node::plane of a switch; 0 without switches).
std::size_t plane_count(const Topology& topo);

}  // namespace stepsim::topology
