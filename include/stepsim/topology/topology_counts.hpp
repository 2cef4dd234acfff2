#pragma once
/// What a topology holds, from its description alone: every generator's formulas for its
/// nodes, ports and links (Generator::counts), so that a memory estimate can refuse an input
/// before a single node is built. A unit test holds the formulas to the built topologies.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

struct TopologySpec;

/// A topology's counts (its server nodes are NVLink domains where nvlink_domain joins servers).
struct TopologyCounts {
  std::uint64_t servers = 0;  ///< server nodes
  std::uint64_t switches = 0;
  std::uint64_t ports = 0;  ///< every node's ports, cabled or not
  std::uint64_t links = 0;
  std::uint64_t edge_switches = 0;  ///< switches cabled to a server
  std::uint64_t gpus = 0;
  [[nodiscard]] std::uint64_t nodes() const { return servers + switches; }
  bool operator==(const TopologyCounts&) const = default;
};

/// The counts of a built topology.
TopologyCounts count_topology(const Topology& topo);

/// The counts generate_topology(spec) builds, from the generator's formulas, after the same
/// checks of the kind and the parameters (ranges, the generator's own rules, nvlink_domain);
/// the ports and cables are checked by the build. No node is built.
Result<TopologyCounts> topology_counts(const TopologySpec& spec);

/// Reads a topology file's `topology:` section (its only top-level key) without building it.
Result<TopologySpec> load_topology_spec(const std::string& path);

}  // namespace stepsim::topology
