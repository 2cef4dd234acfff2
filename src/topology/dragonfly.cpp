// Dragonfly (Kim, Dally, Scott, Abts, ISCA 2008): g groups of a routers; every router has p
// hosts, a-1 local links (all-to-all inside its group) and h global links. Global links follow
// the "absolute" arrangement (Camarero et al., ACM TACO 2014): global port j of a group (router
// j/h, its (j mod h)-th global port) leads to the (j mod (g-1))-th other group in id order, so
// every pair of groups gets floor(a*h/(g-1)) links (exactly one at the maximum g = a*h + 1).
// Simplifies: one NIC per server, routers of radix p + (a-1) + h, no intra-group tiers.
#include <string>

#include "src/topology/generator_registry.hpp"
#include "src/topology/nvlink_domain.hpp"

namespace stepsim::topology {
namespace {

constexpr std::uint64_t kMaxDragonflyServers = 1u << 20;

class Dragonfly final : public Generator {
 public:
  [[nodiscard]] std::string name() const override { return "dragonfly"; }
  [[nodiscard]] TopologyTraits traits() const override { return {.global_links = true}; }
  [[nodiscard]] std::string description() const override {
    return "dragonfly (Kim 2008): groups of all-to-all routers, global links between all groups";
  }
  [[nodiscard]] std::vector<ParamSpec> params() const override {
    return {
        {"routers_per_group", "a: routers in a group (all-to-all local links)", 1, 256, 4, ""},
        {"hosts_per_router", "p: servers on each router", 1, 256, 2, ""},
        {"global_links_per_router", "h: global links per router", 1, 256, 2, ""},
        {"groups", "g: number of groups, in [2, a*h + 1]", 2, 65537, std::nullopt,
         "a*h + 1 (the maximum, one link per group pair)"},
        {"gpus_per_server", "GPUs in a server (all behind its one NIC)", 1, 64, 1, ""},
        nvlink_domain_param(),
    };
  }
  [[nodiscard]] std::vector<LinkClassSpec> link_classes() const override {
    return {{"host_router", "server NIC to its router", CableKind::kDac, Length::m(3)},
            {"local", "router to router inside a group", CableKind::kDac, Length::m(5)},
            {"global", "router to router between groups", CableKind::kOptics, Length::m(100)}};
  }
  [[nodiscard]] Result<TopologyCounts> counts(const GeneratorParams& params) const override {
    const auto s = shape(params);
    if (!s) return s.error();
    const std::uint64_t g = s->g, a = s->a, p = s->p;
    const std::uint64_t routers = g * a;
    TopologyCounts c;
    c.servers = routers * p;
    c.switches = c.edge_switches = routers;
    c.ports = c.servers + routers * (p + (a - 1) + s->h);
    // Host links, all-to-all local links in each group, floor(a*h/(g-1)) per pair of groups.
    c.links = c.servers + g * (a * (a - 1) / 2) + g * (g - 1) / 2 * (a * s->h / (g - 1));
    c.gpus = c.servers * s->gpus;
    return c;
  }
  [[nodiscard]] Result<Topology> build(const GeneratorParams& params,
                                       std::span<const LinkSpec> links,
                                       Topology topo) const override {
    const auto sh = shape(params);
    if (!sh) return sh.error();
    const std::uint32_t a = sh->a, p = sh->p, h = sh->h, gpus = sh->gpus, g = sh->g;
    const std::uint32_t radix = p + (a - 1) + h;
    topo.tier_names = {"server", "router"};

    // Servers router by router, group by group; then routers in the same order.
    for (std::uint32_t grp = 0; grp < g; ++grp) {
      for (std::uint32_t s = 0; s < a * p; ++s)
        topo.add_node(NodeKind::kServer, 0, 1, grp, 0, gpus);
    }
    const auto router = [&](std::uint32_t grp, std::uint32_t r) {
      return static_cast<NodeId>(std::uint64_t{g} * a * p + std::uint64_t{grp} * a + r);
    };
    for (std::uint32_t grp = 0; grp < g; ++grp) {
      for (std::uint32_t r = 0; r < a; ++r) topo.add_node(NodeKind::kSwitch, 1, radix, grp);
    }
    for (std::uint32_t grp = 0; grp < g; ++grp) {
      for (std::uint32_t r = 0; r < a; ++r) {
        for (std::uint32_t i = 0; i < p; ++i) {
          topo.connect((grp * a + r) * p + i, 0, router(grp, r), i, links[0]);
        }
      }
    }
    // Local: router r's port to router q is p + (q < r ? q : q - 1).
    for (std::uint32_t grp = 0; grp < g; ++grp) {
      for (std::uint32_t r = 0; r < a; ++r) {
        for (std::uint32_t q = r + 1; q < a; ++q) {
          topo.connect(router(grp, r), p + q - 1, router(grp, q), p + r, links[1]);
        }
      }
    }
    // Global: port j = copy * (g-1) + other; `other` indexes the other groups in id order.
    const std::uint32_t others = g - 1;
    const std::uint32_t per_pair = a * h / others;
    for (std::uint32_t grp = 0; grp < g; ++grp) {
      for (std::uint32_t j = 0; j < per_pair * others; ++j) {
        const std::uint32_t other = j % others;
        const std::uint32_t to = other < grp ? other : other + 1;
        if (to < grp) continue;                                // cabled from the lower group
        const std::uint32_t back = j / others * others + grp;  // grp < to: index grp among to's
        topo.connect(router(grp, j / h), p + a - 1 + j % h, router(to, back / h),
                     p + a - 1 + back % h, links[2]);
      }
    }
    return topo;
  }

 private:
  // The checked parameters.
  struct Shape {
    std::uint32_t a = 0, p = 0, h = 0, gpus = 0, g = 0;
  };
  static Result<Shape> shape(const GeneratorParams& params) {
    Shape s;
    s.a = static_cast<std::uint32_t>(params.get("routers_per_group"));
    s.p = static_cast<std::uint32_t>(params.get("hosts_per_router"));
    s.h = static_cast<std::uint32_t>(params.get("global_links_per_router"));
    s.gpus = static_cast<std::uint32_t>(params.get("gpus_per_server"));
    const std::uint64_t max_groups = std::uint64_t{s.a} * s.h + 1;
    const std::uint64_t g64 = static_cast<std::uint64_t>(params.get_or("groups", max_groups));
    if (g64 < 2 || g64 > max_groups) {
      return params.error("groups", std::to_string(g64) + " groups cannot all be connected: " +
                                        "allowed 2 to a*h + 1 = " + std::to_string(max_groups) +
                                        " (a = " + std::to_string(s.a) + " routers x h = " +
                                        std::to_string(s.h) + " global links per group)");
    }
    if (g64 * s.a * s.p > kMaxDragonflyServers) {
      return params.error("groups",
                          std::to_string(g64) + " groups x " + std::to_string(s.a) + " routers x " +
                              std::to_string(s.p) + " hosts = " + std::to_string(g64 * s.a * s.p) +
                              " servers, more than " + std::to_string(kMaxDragonflyServers));
    }
    s.g = static_cast<std::uint32_t>(g64);
    return s;
  }
};

const GeneratorRegistration kDragonfly{[] { return std::make_unique<Dragonfly>(); }};

}  // namespace
}  // namespace stepsim::topology
