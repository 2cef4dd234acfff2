#include "stepsim/topology/topology_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "src/topology/nvlink_domain.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/named_values.hpp"
#include "stepsim/phy/port_rate.hpp"
#include "stepsim/topology/generator.hpp"

namespace stepsim::topology {
namespace {

constexpr double kMaxBer = 0.5;

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string describe(const ParamSpec& p) {
  return "an integer from " + std::to_string(p.min) + " to " + std::to_string(p.max) + ": " +
         p.description;
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  const std::string t = trim(text);
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (first != last && *first == '+') ++first;
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || first == last) return std::nullopt;
  return v;
}

// A pre-FEC bit error rate: a plain decimal or exponent number in [0, kMaxBer].
Result<double> parse_ber(const std::string& text, const std::string& where) {
  const std::string t = trim(text);
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(v)) {
    return Error{where + ": '" + text + "' is not a number (a pre-FEC bit error rate from 0 to " +
                 "0.5, e.g. 1e-8)"};
  }
  if (v < 0.0 || v > kMaxBer) {
    return Error{where + ": " + t + " is out of range (a pre-FEC bit error rate from 0 to 0.5)"};
  }
  return v;
}

constexpr std::array<NamedValue<CableKind>, 3> kCableKinds{{
    {CableKind::kDac, "dac", "copper"},
    {CableKind::kAoc, "aoc", "active optical, no DSP"},
    {CableKind::kOptics, "optics", "a DSP module at each end"},
}};

Result<CableKind> parse_cable_kind(const std::string& text, const std::string& where) {
  if (auto k = find_named(kCableKinds, text)) return *k;
  return Error{where + ": unknown cable kind '" + text +
               "' (allowed: " + allowed_names(kCableKinds) + ")"};
}

// Index of port type `name` in topo.port_types, adding it on first use.
Result<std::uint16_t> port_type_index(Topology& topo, const std::string& name,
                                      const std::string& where) {
  for (std::size_t i = 0; i < topo.port_types.size(); ++i) {
    if (topo.port_types[i].name == name) return static_cast<std::uint16_t>(i);
  }
  auto spec = phy::standard_port(name);
  if (!spec) return Error{where + ": " + spec.error().message};
  topo.port_types.push_back(*spec);
  return static_cast<std::uint16_t>(topo.port_types.size() - 1);
}

std::string stem(const std::string& path) {
  std::string s =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char* ext : {".yaml", ".yml"}) {
    const std::string e(ext);
    if (s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0) {
      s.resize(s.size() - e.size());
    }
  }
  return s;
}

Result<GeneratorParams> read_params(const TopologySpec& spec, const Generator& gen) {
  const std::vector<ParamSpec> specs = gen.params();
  for (const auto& [key, text] : spec.params) {
    const bool known =
        std::any_of(specs.begin(), specs.end(), [&](const ParamSpec& p) { return p.name == key; });
    if (!known) {
      std::vector<std::string> keys = common_topology_keys();
      for (const ParamSpec& p : specs) keys.push_back(p.name);
      return Error{spec.locate("topology." + key) + ": unknown key for kind " + gen.name() +
                   " (known keys: " + join(keys) + ")"};
    }
  }
  GeneratorParams values;
  for (const ParamSpec& p : specs) {
    const std::string path = "topology." + p.name;
    const auto it = spec.params.find(p.name);
    if (it == spec.params.end()) {
      if (p.default_value) {
        values.set(p.name, *p.default_value,
                   spec.locate(path) + " (default " + std::to_string(*p.default_value) + ")");
      } else if (p.required()) {
        return Error{spec.locate(path) + ": missing; kind " + gen.name() + " needs it (" +
                     describe(p) + ")"};
      } else {
        values.note_absent(p.name, spec.locate(path) + " (derived: " + p.derived_default + ")");
      }
      continue;
    }
    const auto v = parse_integer(it->second);
    if (!v) {
      return Error{spec.locate(path) + ": '" + it->second +
                   "' is not an integer (allowed: " + describe(p) + ")"};
    }
    if (*v < p.min || *v > p.max) {
      return Error{spec.locate(path) + ": " + std::to_string(*v) +
                   " is out of range (allowed: " + describe(p) + ")"};
    }
    values.set(p.name, *v, spec.locate(path));
  }
  return values;
}

// Longest cable accepted: 1000 km (5 ms of fibre), beyond any cluster.
constexpr Length kMaxCableLength = Length::m(1000'000);

Result<PhyParams> read_phy(const TopologySpec& spec) {
  PhyParams phy;
  // Ranges far beyond real hardware that keep every link latency well inside SimTime.
  const struct {
    const char* key;
    SimTime* out;
    SimTime max;
  } fields[] = {{"phy_latency", &phy.phy_latency, SimTime::ms(1)},
                {"dsp_latency", &phy.dsp_latency, SimTime::ms(1)},
                {"fiber_delay_per_m", &phy.per_metre, SimTime::us(1)},
                {"dac_delay_per_m", &phy.dac_per_metre, SimTime::us(1)}};
  for (const auto& [key, text] : spec.phy) {
    const std::string path = "topology.phy." + key;
    SimTime* out = nullptr;
    SimTime max;
    for (const auto& f : fields) {
      if (key == f.key) {
        out = f.out;
        max = f.max;
      }
    }
    if (out == nullptr) {
      return Error{spec.locate(path) + ": unknown key (known keys: " + join(phy_keys()) + ")"};
    }
    const auto t = parse_time(text);
    if (!t) return Error{spec.locate(path) + ": " + t.error().message};
    if (*t > max) {
      return Error{spec.locate(path) + ": '" + text + "' is out of range (0ps.." + to_string(max) +
                   ")"};
    }
    *out = *t;
  }
  return phy;
}

Result<std::vector<LinkSpec>> read_cables(const TopologySpec& spec, const Generator& gen,
                                          double ber, Topology& topo) {
  const std::vector<LinkClassSpec> classes = gen.link_classes();
  std::vector<std::string> names;
  for (const auto& c : classes) names.push_back(c.name);
  for (const auto& [cls, cable] : spec.cables) {
    if (std::find(names.begin(), names.end(), cls) == names.end()) {
      return Error{spec.locate("topology.cables." + cls) + ": unknown link class for kind " +
                   gen.name() + " (known: " + join(names) + ")"};
    }
  }
  const auto port = port_type_index(topo, spec.port, spec.locate("topology.port"));
  if (!port) return port.error();
  std::vector<LinkSpec> links;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    LinkSpec ls;
    ls.link_class = static_cast<std::uint8_t>(i);
    ls.port_type = *port;
    ls.cable = classes[i].cable;
    ls.length = classes[i].length;
    ls.ber = ber;
    const auto it = spec.cables.find(classes[i].name);
    if (it != spec.cables.end()) {
      const CableSpec& c = it->second;
      const std::string path = "topology.cables." + classes[i].name + ".";
      if (!c.port.empty()) {
        const auto p = port_type_index(topo, c.port, spec.locate(path + "port"));
        if (!p) return p.error();
        ls.port_type = *p;
      }
      if (!c.kind.empty()) {
        const auto k = parse_cable_kind(c.kind, spec.locate(path + "kind"));
        if (!k) return k.error();
        ls.cable = *k;
      }
      if (!c.length.empty()) {
        const auto len = parse_length(c.length);
        if (!len) return Error{spec.locate(path + "length") + ": " + len.error().message};
        if (len->micrometres() <= 0) {
          return Error{spec.locate(path + "length") + ": a cable must be longer than 0m"};
        }
        if (*len > kMaxCableLength) {
          return Error{spec.locate(path + "length") + ": '" + c.length +
                       "' is out of range (1um.." + to_string(kMaxCableLength) + ")"};
        }
        ls.length = *len;
      }
      if (!c.ber.empty()) {
        const auto b = parse_ber(c.ber, spec.locate(path + "ber"));
        if (!b) return b.error();
        ls.ber = *b;
      }
    }
    // The simulator's lookahead is the smallest link latency: it must be positive.
    if (cable_latency(topo.phy, ls.cable, ls.length) <= SimTime::zero()) {
      return Error{spec.locate("topology.cables." + classes[i].name) +
                   ": the links' latency is 0 (" + to_string(ls.length) + " of " +
                   to_string(ls.cable) + " and topology.phy.phy_latency " +
                   to_string(topo.phy.phy_latency) +
                   "); a link needs a positive latency (a longer cable or a PHY latency > 0)"};
    }
    links.push_back(ls);
  }
  return links;
}

}  // namespace

std::string TopologySpec::locate(const std::string& key_path) const {
  const auto it = lines.find(key_path);
  if (source.empty()) return key_path;
  if (it == lines.end()) return source + ": " + key_path;
  return source + ":" + std::to_string(it->second) + ": " + key_path;
}

const std::vector<std::string>& common_topology_keys() {
  static const std::vector<std::string> keys{"name", "kind", "port", "ber", "cables", "phy"};
  return keys;
}

const std::vector<std::string>& phy_keys() {
  static const std::vector<std::string> keys{"phy_latency", "dsp_latency", "fiber_delay_per_m",
                                             "dac_delay_per_m"};
  return keys;
}

const std::vector<std::string>& cable_keys() {
  static const std::vector<std::string> keys{"kind", "length", "port", "ber"};
  return keys;
}

Result<TopologyCounts> topology_counts(const TopologySpec& spec) {
  if (spec.kind.empty()) {
    return Error{spec.locate("topology.kind") + ": missing (allowed: " + join(generator_names()) +
                 ")"};
  }
  const auto found = find_generator(spec.kind);
  if (!found) return Error{spec.locate("topology.kind") + ": " + found.error().message};
  const auto params = read_params(spec, **found);
  if (!params) return params.error();
  const auto counted = (*found)->counts(*params);
  if (!counted) return counted.error();
  TopologyCounts counts = *counted;
  if (auto joined = join_nvlink_domain_counts(*params, counts); !joined) return joined.error();
  return counts;
}

TopologyCounts count_topology(const Topology& topo) {
  TopologyCounts c;
  c.servers = topo.server_count();
  c.switches = topo.switch_count();
  c.ports = topo.ports.size();
  c.links = topo.links.size();
  c.gpus = topo.gpu_count();
  std::vector<char> edge(topo.nodes.size(), 0);
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v)) continue;
    for (const Port& p : topo.ports_of(v)) {
      if (p.link != kNone) edge[topo.ports[p.peer].node] = 1;
    }
  }
  for (const char e : edge) c.edge_switches += static_cast<std::uint64_t>(e);
  return c;
}

Result<Topology> generate_topology(const TopologySpec& spec) {
  if (spec.kind.empty()) {
    return Error{spec.locate("topology.kind") + ": missing (allowed: " + join(generator_names()) +
                 ")"};
  }
  const auto found = find_generator(spec.kind);
  if (!found) return Error{spec.locate("topology.kind") + ": " + found.error().message};
  const Generator& gen = **found;

  const auto params = read_params(spec, gen);
  if (!params) return params.error();
  if (spec.port.empty()) {
    return Error{spec.locate("topology.port") + ": missing; the port type of the links " +
                 "(allowed: " + join(phy::standard_port_names()) + ")"};
  }
  double ber = 0.0;
  if (!spec.ber.empty()) {
    const auto b = parse_ber(spec.ber, spec.locate("topology.ber"));
    if (!b) return b.error();
    ber = *b;
  }
  const auto phy = read_phy(spec);
  if (!phy) return phy.error();

  Topology topo;
  topo.name = !spec.name.empty()     ? spec.name
              : !spec.source.empty() ? stem(spec.source)
                                     : gen.name();
  topo.generator = gen.name();
  topo.traits = gen.traits();
  topo.phy = *phy;
  for (const auto& c : gen.link_classes()) topo.link_classes.push_back(c.name);
  const auto links = read_cables(spec, gen, ber, topo);
  if (!links) return links.error();

  Result<Topology> result = gen.build(*params, *links, std::move(topo));
  if (!result) return result;
  Topology built = std::move(result).value();
  if (auto joined = join_nvlink_domains(*params, built); !joined) return joined.error();
  const std::string problem = find_wiring_error(built);
  STEPSIM_CHECK(problem.empty(),
                "generator " + gen.name() + " built a broken topology: " + problem);
  return built;
}

}  // namespace stepsim::topology
