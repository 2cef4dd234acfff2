#pragma once
/// A topology as the user wrote it (a YAML file, or code), and the one function that checks it
/// against the named generator's declarations and builds the Topology. Values are kept as the
/// user's text so that every check, and every message, lives in generate_topology().

#include <map>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// How one class of links is cabled; an empty field takes the default.
struct CableSpec {
  std::string kind;    ///< "dac", "aoc" or "optics"; empty: the generator's default
  std::string length;  ///< e.g. "30m"; empty: the generator's default
  std::string port;    ///< phy::standard_port name; empty: TopologySpec::port
  std::string ber;     ///< pre-FEC bit error rate; empty: TopologySpec::ber
};

/// The user's description of a topology (the `topology:` section of a file).
struct TopologySpec {
  std::string source;  ///< file name for messages; empty when built in code
  std::string name;    ///< empty: the file name without directory and extension
  std::string kind;    ///< generator name
  std::string port;    ///< phy::standard_port name of every link (required)
  std::string ber;     ///< pre-FEC BER of every link; empty: 0
  std::map<std::string, std::string> params;  ///< generator parameters, e.g. {"k", "16"}
  std::map<std::string, CableSpec> cables;    ///< by link class name
  std::map<std::string, std::string> phy;     ///< PhyParams overrides, e.g. {"dsp_latency", ...}
  std::map<std::string, int> lines;  ///< key path ("topology.k") -> 1-based line in `source`

  /// Where a key is, for messages: "file:line: topology.k" (parts omitted when unknown).
  [[nodiscard]] std::string locate(const std::string& key_path) const;
};

/// Keys of the `topology:` section that every kind accepts (generator parameters come on top).
const std::vector<std::string>& common_topology_keys();
/// Keys of `topology.phy`.
const std::vector<std::string>& phy_keys();
/// Keys of one `topology.cables.<class>` entry.
const std::vector<std::string>& cable_keys();

/// Checks `spec` against its generator (unknown keys, ranges, units, port names) and builds the
/// topology. The error is one message naming the file, line, key path and what is allowed.
Result<Topology> generate_topology(const TopologySpec& spec);

}  // namespace stepsim::topology
