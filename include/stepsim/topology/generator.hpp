#pragma once
/// Topology generators: one registered file per kind ("fat_tree", "rail_optimized",
/// "dragonfly"). Each declares its parameters (name, range, default, description) and its link
/// classes, so that loaders validate input against them and `stepsim list topologies` prints
/// them. Users reach generators through generate_topology() (topology_spec.hpp).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/topology/topology_counts.hpp"

namespace stepsim::topology {

/// A declared integer parameter of a generator.
struct ParamSpec {
  std::string name;
  std::string description;
  std::int64_t min = 0;  ///< inclusive range
  std::int64_t max = 0;
  std::optional<std::int64_t> default_value;  ///< taken when the input omits the parameter
  std::string derived_default;  ///< no default_value: how the generator derives it ("" = required)

  /// True when the input must give the parameter.
  [[nodiscard]] bool required() const { return !default_value && derived_default.empty(); }
};

/// A declared class of links (e.g. "leaf_spine") and the cable it gets unless the input says.
struct LinkClassSpec {
  std::string name;
  std::string description;
  CableKind cable = CableKind::kDac;
  Length length;
};

/// Parameter values handed to a generator: declared ranges already checked, defaults filled
/// in. Each value remembers where it came from, so a generator's own checks (k odd, too many
/// servers) produce messages that name the file, line and key.
class GeneratorParams {
 public:
  /// Sets a value; `where` locates it for messages (e.g. "fat.yaml:4: topology.k").
  void set(const std::string& name, std::int64_t value, std::string where);
  /// Records where an absent parameter would be given (for messages about derived values).
  void note_absent(const std::string& name, std::string where);
  /// True when the parameter was given or defaulted.
  [[nodiscard]] bool has(const std::string& name) const;
  /// The value of a parameter that has() (a missing one is a bug in the generator).
  [[nodiscard]] std::int64_t get(const std::string& name) const;
  /// The value of a parameter, or `fallback` when it was neither given nor defaulted.
  [[nodiscard]] std::int64_t get_or(const std::string& name, std::int64_t fallback) const;
  /// A user error about parameter `name`: "<where>: <message>".
  [[nodiscard]] Error error(const std::string& name, const std::string& message) const;
  /// Where the parameter was given ("topology.<name>" when it was not).
  [[nodiscard]] std::string where(const std::string& name) const;

 private:
  struct Value {
    std::optional<std::int64_t> value;
    std::string where;
  };
  std::map<std::string, Value> values_;
};

/// Builds one kind of cluster.
class Generator {
 public:
  virtual ~Generator() = default;
  /// Registry name, the YAML `kind`.
  [[nodiscard]] virtual std::string name() const = 0;
  /// One line: what it models.
  [[nodiscard]] virtual std::string description() const = 0;
  /// What its clusters are (global links, rail planes); the models read these, never the name.
  [[nodiscard]] virtual TopologyTraits traits() const { return {}; }
  /// Declared parameters, in the order a listing shows them.
  [[nodiscard]] virtual std::vector<ParamSpec> params() const = 0;
  /// Declared link classes; links[i] passed to build() is class i.
  [[nodiscard]] virtual std::vector<LinkClassSpec> link_classes() const = 0;
  /// Adds nodes and links to `topo`, which arrives with name, generator, phy, port types and
  /// link class names set. Numbering rule: servers first, in locality order (the servers under
  /// one leaf or router have consecutive ids), then switches. Returns a user error when the
  /// parameters cannot be built (the message names the parameter).
  [[nodiscard]] virtual Result<Topology> build(const GeneratorParams& params,
                                               std::span<const LinkSpec> links,
                                               Topology topo) const = 0;
  /// What build() makes of `params` (before NVLink domains join servers), by the same checks
  /// of the parameters, without building it.
  [[nodiscard]] virtual Result<TopologyCounts> counts(const GeneratorParams& params) const = 0;
};

/// The generator registered as `kind`; the error lists the known kinds.
Result<const Generator*> find_generator(const std::string& kind);
/// Names of the registered generators, sorted.
std::vector<std::string> generator_names();

}  // namespace stepsim::topology
