#pragma once
/// Topology files: YAML with one top-level section, `topology:` (the format is documented in
/// docs/topology.md). Every error is one message naming the file, the line, the key path
/// (e.g. topology.cables.leaf_spine.length) and what is allowed.

#include <yaml-cpp/yaml.h>

#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::topology {

/// Reads and builds a topology file (its only top-level key must be `topology`).
Result<Topology> load_topology(const std::string& path);
/// Same, from the text of a topology file; `source_name` names it in messages.
Result<Topology> parse_topology(const std::string& text, const std::string& source_name);
/// Builds the `topology:` section of an already parsed document. Other top-level sections (a
/// scenario's workload, fabric, ...) are left to their own readers.
Result<Topology> build_topology(const YAML::Node& root, const std::string& source_name);
/// Reads the `topology:` section into a TopologySpec (structure only; generate_topology()
/// checks the values).
Result<TopologySpec> read_topology_spec(const YAML::Node& root, const std::string& source_name);

}  // namespace stepsim::topology
