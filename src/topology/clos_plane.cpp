#include "src/topology/clos_plane.hpp"

#include <vector>

#include "stepsim/core/fatal.hpp"

namespace stepsim::topology {
namespace {

constexpr std::uint64_t kMaxServers = 1u << 20;

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Smallest divisor of `n` that is at least `at_least` (n itself always qualifies here).
std::uint32_t smallest_divisor_at_least(std::uint32_t n, std::uint64_t at_least) {
  for (std::uint32_t s = 1; s <= n; ++s) {
    if (n % s == 0 && s >= at_least) return s;
  }
  return n;
}

}  // namespace

std::uint64_t ClosShape::capacity() const {
  const std::uint64_t groups =
      tiers == 3 ? std::uint64_t{radix} * (spine_down / rails) : radix / rails;
  return groups * down;
}

namespace {

// Ratios r in 1..16 with `radix` divisible by r + 1, for messages.
std::string allowed_ratios(std::int64_t radix) {
  std::string allowed;
  for (std::int64_t r = 1; r <= 16; ++r) {
    if (radix % (r + 1) == 0) allowed += (allowed.empty() ? "" : ", ") + std::to_string(r);
  }
  return allowed;
}

}  // namespace

Result<ClosShape> make_clos_shape(const GeneratorParams& params, const std::string& radix_key,
                                  std::uint32_t rails, const std::string& rails_key) {
  const std::int64_t radix = params.get(radix_key);
  const std::int64_t over = params.get("oversubscription");
  const std::int64_t spine_over = params.get_or("spine_oversubscription", 1);
  const std::int64_t tiers = params.get("tiers");
  if (radix % 2 != 0) {
    return params.error(radix_key, std::to_string(radix) +
                                       " is odd; it must be even (leaves and spines split "
                                       "their ports into halves)");
  }
  if (radix % (over + 1) != 0) {
    return params.error("oversubscription",
                        std::to_string(over) + " needs " + radix_key + " divisible by " +
                            std::to_string(over + 1) + " (a leaf splits its " +
                            std::to_string(radix) + " ports " + std::to_string(over) +
                            ":1 down:up); allowed with " + radix_key + " = " +
                            std::to_string(radix) + ": " + allowed_ratios(radix));
  }
  if (spine_over > 1 && tiers != 3) {
    return params.error("spine_oversubscription",
                        std::to_string(spine_over) +
                            " needs tiers: 3 (a 2-tier plane's spines have no uplinks; "
                            "allowed with tiers 2: 1)");
  }
  if (radix % (spine_over + 1) != 0) {
    return params.error("spine_oversubscription",
                        std::to_string(spine_over) + " needs " + radix_key + " divisible by " +
                            std::to_string(spine_over + 1) + " (a spine splits its " +
                            std::to_string(radix) + " ports " + std::to_string(spine_over) +
                            ":1 down:up); allowed with " + radix_key + " = " +
                            std::to_string(radix) + ": " + allowed_ratios(radix));
  }
  ClosShape s;
  s.radix = static_cast<std::uint32_t>(radix);
  s.tiers = static_cast<int>(tiers);
  s.up = static_cast<std::uint32_t>(radix / (over + 1));
  s.down_ports = s.radix - s.up;
  s.breakout = static_cast<std::uint32_t>(params.get_or("leaf_breakout", 1));
  s.down = s.down_ports * s.breakout;
  s.spine_up = static_cast<std::uint32_t>(radix / (spine_over + 1));
  s.spine_down = s.radix - s.spine_up;
  s.rails = rails;
  const std::uint32_t per_pod = s.leaves_per_pod();
  if (rails > 1 && (rails > per_pod || (s.tiers == 3 && per_pod % rails != 0))) {
    return params.error(
        rails_key, std::to_string(rails) + " NICs per server go to " + std::to_string(rails) +
                       " leaves of a rail group, which must fill " +
                       (s.tiers == 3 ? "a pod of " : "the ") + std::to_string(per_pod) +
                       " leaves evenly (allowed: a divisor of " + std::to_string(per_pod) + ")");
  }
  return s;
}

Result<bool> check_breakout(const GeneratorParams& params, const ClosShape& shape,
                            const Topology& topo, const ClosLinks& links) {
  if (shape.breakout <= 1) return true;
  const phy::PortSpec& leg = topo.port_types[links.server_leaf.port_type];
  const phy::PortSpec& port = topo.port_types[links.leaf_spine.port_type];
  const double legs = leg.data_rate().bits_per_second() * static_cast<double>(shape.breakout);
  if (legs > port.data_rate().bits_per_second() * (1 + 1e-9)) {
    return params.error("leaf_breakout",
                        std::to_string(shape.breakout) + " legs of " + leg.name +
                            " (cables.server_leaf.port) are faster than the leaf port they "
                            "split (" +
                            port.name + ", the leaf's fabric port): give the server links " +
                            "at most 1/" + std::to_string(shape.breakout) + " of it");
  }
  return true;
}

Result<bool> check_nics(const GeneratorParams& params, std::uint32_t gpus, std::uint32_t nics) {
  if (nics > gpus || gpus % nics != 0) {
    std::string allowed;
    for (std::uint32_t d = 1; d <= gpus; ++d) {
      if (gpus % d == 0) allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
    }
    return params.error(
        "nics_per_server",
        std::to_string(nics) + " does not divide gpus_per_server " + std::to_string(gpus) +
            " (GPUs share NICs in equal blocks behind PCIe switches; allowed: " + allowed + ")");
  }
  return true;
}

Result<std::uint32_t> clos_servers(const GeneratorParams& params, const ClosShape& shape,
                                   const std::string& what) {
  const std::uint64_t cap = shape.capacity();
  const std::uint64_t per_group = shape.down;
  if (!params.has("servers")) {
    if (cap > kMaxServers) {
      return params.error("servers", "not given, and the full " + what + " would hold " +
                                         std::to_string(cap) + " servers, more than " +
                                         std::to_string(kMaxServers) + "; set servers");
    }
    return static_cast<std::uint32_t>(cap);
  }
  const auto n = static_cast<std::uint64_t>(params.get("servers"));
  if (n > cap) {
    return params.error("servers", std::to_string(n) + " servers do not fit " + what +
                                       " (at most " + std::to_string(cap) + ": " +
                                       std::to_string(cap / per_group) +
                                       (shape.rails > 1 ? " rail groups of " : " leaves of ") +
                                       std::to_string(per_group) + " servers)");
  }
  return static_cast<std::uint32_t>(n);
}

TopologyCounts clos_plane_counts(const ClosShape& shape, std::uint32_t servers) {
  TopologyCounts c;
  const std::uint64_t radix = shape.radix;
  const std::uint64_t up = shape.up;
  const std::uint64_t leaves = std::uint64_t{ceil_div(servers, shape.down)} * shape.rails;
  c.switches = c.edge_switches = leaves;
  c.ports = leaves * (shape.down + up);
  c.links = std::uint64_t{servers} * shape.rails;
  if (leaves < 2) return c;
  if (shape.tiers == 2) {
    const std::uint64_t spines = smallest_divisor_at_least(shape.up, ceil_div(leaves * up, radix));
    c.switches += spines;
    c.ports += spines * radix;
    c.links += leaves * up;
    return c;
  }
  const std::uint64_t pods = ceil_div(leaves, shape.leaves_per_pod());
  c.switches += pods * up;
  c.ports += pods * up * radix;
  c.links += leaves * up;
  if (pods < 2) return c;
  const std::uint64_t sup = shape.spine_up;
  const std::uint64_t cores =
      smallest_divisor_at_least(shape.spine_up, ceil_div(pods * sup, radix));
  c.switches += up * cores;
  c.ports += up * cores * radix;
  c.links += pods * up * sup;
  return c;
}

void build_clos_plane(Topology& topo, const ClosShape& shape, std::uint32_t servers,
                      std::uint32_t nic, std::uint16_t plane, const ClosLinks& links) {
  STEPSIM_CHECK(servers >= 1 && servers <= shape.capacity(), "plane population out of range");
  const std::uint32_t radix = shape.radix;
  const std::uint32_t down = shape.down;
  const std::uint32_t up = shape.up;
  const std::uint32_t per_pod = shape.leaves_per_pod();
  const std::uint32_t rails = shape.rails;
  const std::uint32_t leaves = ceil_div(servers, down) * rails;
  const std::uint32_t pods = ceil_div(leaves, per_pod);

  std::vector<NodeId> leaf(leaves);
  for (std::uint32_t l = 0; l < leaves; ++l) {
    // Server ports (broken out) first, then the uplinks.
    leaf[l] =
        topo.add_node(NodeKind::kSwitch, 1, down + up, shape.tiers == 3 ? l / per_pod : 0, plane);
  }
  for (std::uint32_t s = 0; s < servers; ++s) {
    for (std::uint32_t i = 0; i < rails; ++i) {
      topo.connect(s, nic + i, leaf[s / down * rails + i], s % down, links.server_leaf);
    }
  }
  if (leaves < 2) return;  // one leaf switches everything itself

  if (shape.tiers == 2) {
    // Fewest spines whose ports take every leaf uplink; `bundle` parallel links per pair.
    const std::uint32_t spines =
        smallest_divisor_at_least(up, ceil_div(std::uint64_t{leaves} * up, radix));
    const std::uint32_t bundle = up / spines;
    std::vector<NodeId> spine(spines);
    for (std::uint32_t s = 0; s < spines; ++s) {
      spine[s] = topo.add_node(NodeKind::kSwitch, 2, radix, 0, plane);
    }
    for (std::uint32_t l = 0; l < leaves; ++l) {
      for (std::uint32_t j = 0; j < up; ++j) {
        topo.connect(leaf[l], down + j, spine[j % spines], l * bundle + j / spines,
                     links.leaf_spine);
      }
    }
    return;
  }

  // 3 tiers: pod p has `up` spines; leaf uplink j goes to spine j of its pod.
  std::vector<NodeId> spine(static_cast<std::size_t>(pods) * up);
  for (std::uint32_t p = 0; p < pods; ++p) {
    for (std::uint32_t i = 0; i < up; ++i) {
      spine[p * up + i] = topo.add_node(NodeKind::kSwitch, 2, radix, p, plane);
    }
  }
  for (std::uint32_t l = 0; l < leaves; ++l) {
    const std::uint32_t p = l / per_pod;
    for (std::uint32_t j = 0; j < up; ++j) {
      topo.connect(leaf[l], down + j, spine[p * up + j], l % per_pod, links.leaf_spine);
    }
  }
  if (pods < 2) return;  // one pod: the spines connect all its leaves

  // Column i (spine i of every pod) gets the fewest cores whose ports take all the column's
  // uplinks; spine uplink j goes to core j mod cores, `bundle` parallel links per pair.
  const std::uint32_t sdown = shape.spine_down;
  const std::uint32_t sup = shape.spine_up;
  const std::uint32_t cores =
      smallest_divisor_at_least(sup, ceil_div(std::uint64_t{pods} * sup, radix));
  const std::uint32_t bundle = sup / cores;
  std::vector<NodeId> core(static_cast<std::size_t>(up) * cores);
  for (std::uint32_t i = 0; i < up; ++i) {
    for (std::uint32_t c = 0; c < cores; ++c) {
      core[i * cores + c] = topo.add_node(NodeKind::kSwitch, 3, radix, i, plane);
    }
  }
  for (std::uint32_t p = 0; p < pods; ++p) {
    for (std::uint32_t i = 0; i < up; ++i) {
      for (std::uint32_t j = 0; j < sup; ++j) {
        topo.connect(spine[p * up + i], sdown + j, core[i * cores + j % cores],
                     p * bundle + j / cores, links.spine_core);
      }
    }
  }
}

}  // namespace stepsim::topology
