#include "stepsim/topology/topology_loader.hpp"

#include <set>

#include "stepsim/config/yaml_input.hpp"
#include "stepsim/topology/topology_counts.hpp"

namespace stepsim::topology {
namespace {

std::string comma_list(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

int line_of(const YAML::Node& n) {
  return n.Mark().line + 1;
}

std::string where(const std::string& source, const YAML::Node& n, const std::string& path) {
  return n.Mark().line >= 0 ? source + ":" + std::to_string(line_of(n)) + ": " + path
                            : source + ": " + path;
}

// The text of a scalar value; an error for a missing value, a list or a map.
Result<std::string> scalar(const YAML::Node& v, const std::string& at) {
  if (v.IsNull()) return Error{at + ": has no value"};
  if (v.IsSequence()) return Error{at + ": expected a single value, not a list"};
  if (v.IsMap()) return Error{at + ": expected a single value, not a map"};
  return v.Scalar();
}

// Iterates the entries of a map, checking that keys are plain words given once.
template <class F>
Result<bool> for_each_entry(const YAML::Node& map, const std::string& source,
                            const std::string& path, F&& visit) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      return Error{where(source, kv.first, path) + ": keys must be plain words"};
    }
    const std::string key = kv.first.Scalar();
    const std::string key_path = path + "." + key;
    if (!seen.insert(key).second) {
      return Error{where(source, kv.first, key_path) + ": given twice"};
    }
    Result<bool> r = visit(key, key_path, kv.first, kv.second);
    if (!r) return r;
  }
  return true;
}

Result<bool> expect_map(const YAML::Node& n, const std::string& at, const std::string& keys) {
  if (n.IsMap()) return true;
  return Error{at + ": expected a map of keys (" + keys + ")"};
}

// topology.cables.CLASS: the fields of one link class's cables.
Result<bool> read_cable(const YAML::Node& cv, const std::string& source,
                        const std::string& cls_path, CableSpec& cable, TopologySpec& spec) {
  return for_each_entry(
      cv, source, cls_path,
      [&](const std::string& field, const std::string& field_path, const YAML::Node& fk,
          const YAML::Node& fv) -> Result<bool> {
        spec.lines[field_path] = line_of(fk);
        const std::string field_at = where(source, fk, field_path);
        const auto text = scalar(fv, field_at);
        if (!text) return text.error();
        if (field == "kind") {
          cable.kind = *text;
        } else if (field == "length") {
          cable.length = *text;
        } else if (field == "port") {
          cable.port = *text;
        } else if (field == "ber") {
          cable.ber = *text;
        } else {
          return Error{field_at + ": unknown key (known keys: " + comma_list(cable_keys()) + ")"};
        }
        return true;
      });
}

// topology.cables: one entry per link class.
Result<bool> read_cables(const YAML::Node& v, const std::string& source, const std::string& path,
                         const std::string& at, TopologySpec& spec) {
  const auto m = expect_map(v, at, "one entry per link class");
  if (!m) return m;
  return for_each_entry(v, source, path,
                        [&](const std::string& cls, const std::string& cls_path,
                            const YAML::Node& ck, const YAML::Node& cv) -> Result<bool> {
                          spec.lines[cls_path] = line_of(ck);
                          const auto cm =
                              expect_map(cv, where(source, ck, cls_path), comma_list(cable_keys()));
                          if (!cm) return cm;
                          return read_cable(cv, source, cls_path, spec.cables[cls], spec);
                        });
}

// topology.phy: the physical layer's keys, as text (checked by the generator).
Result<bool> read_phy(const YAML::Node& v, const std::string& source, const std::string& path,
                      const std::string& at, TopologySpec& spec) {
  const auto m = expect_map(v, at, comma_list(phy_keys()));
  if (!m) return m;
  return for_each_entry(v, source, path,
                        [&](const std::string& field, const std::string& field_path,
                            const YAML::Node& fk, const YAML::Node& fv) -> Result<bool> {
                          spec.lines[field_path] = line_of(fk);
                          const auto text = scalar(fv, where(source, fk, field_path));
                          if (!text) return text.error();
                          spec.phy[field] = *text;
                          return true;
                        });
}

Result<TopologySpec> read_spec(const YAML::Node& root, const std::string& source) {
  if (!root.IsMap() || !root["topology"]) {
    return Error{source + ": missing top-level key 'topology'"};
  }
  const YAML::Node t = root["topology"];
  TopologySpec spec;
  spec.source = source;
  const auto ok = expect_map(t, where(source, t, "topology"),
                             "kind, name, port, ... and the generator's parameters");
  if (!ok) return ok.error();
  const auto r = for_each_entry(
      t, source, "topology",
      [&](const std::string& key, const std::string& path, const YAML::Node& k,
          const YAML::Node& v) -> Result<bool> {
        spec.lines[path] = line_of(k);
        const std::string at = where(source, k, path);
        if (key == "cables") return read_cables(v, source, path, at, spec);
        if (key == "phy") return read_phy(v, source, path, at, spec);
        const auto text = scalar(v, at);
        if (!text) return text.error();
        if (key == "name") {
          spec.name = *text;
        } else if (key == "kind") {
          spec.kind = *text;
        } else if (key == "port") {
          spec.port = *text;
        } else if (key == "ber") {
          spec.ber = *text;
        } else {
          spec.params[key] = *text;  // generate_topology() rejects what the generator lacks
        }
        return true;
      });
  if (!r) return r.error();
  return spec;
}

}  // namespace

Result<TopologySpec> read_topology_spec(const YAML::Node& root, const std::string& source_name) {
  try {
    return read_spec(root, source_name);
  } catch (const YAML::Exception& e) {
    return Error{source_name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
}

Result<Topology> build_topology(const YAML::Node& root, const std::string& source_name) {
  const auto spec = read_topology_spec(root, source_name);
  if (!spec) return spec.error();
  return generate_topology(*spec);
}

Result<Topology> parse_topology(const std::string& text, const std::string& source_name) {
  auto root = config::parse_yaml_document(text, source_name);
  if (!root) return root.error();
  if (root->IsMap()) {
    for (const auto& kv : *root) {
      if (kv.first.Scalar() != "topology") {
        return Error{where(source_name, kv.first, kv.first.Scalar()) +
                     ": unknown top-level key (a topology file holds only 'topology')"};
      }
    }
  }
  return build_topology(*root, source_name);
}

Result<TopologySpec> load_topology_spec(const std::string& path) {
  auto text = config::read_input_file(path, "topology file");
  if (!text) return text.error();
  auto root = config::parse_yaml_document(*text, path);
  if (!root) return root.error();
  if (root->IsMap()) {
    for (const auto& kv : *root) {
      if (kv.first.Scalar() != "topology") {
        return Error{where(path, kv.first, kv.first.Scalar()) +
                     ": unknown top-level key (a topology file holds only 'topology')"};
      }
    }
  }
  return read_topology_spec(*root, path);
}

Result<Topology> load_topology(const std::string& path) {
  auto spec = load_topology_spec(path);
  if (!spec) return spec.error();
  return generate_topology(*spec);
}

}  // namespace stepsim::topology
