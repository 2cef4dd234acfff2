// k-ary fat-tree (Al-Fares, Loukissas, Vahdat, SIGCOMM 2008). 3 tiers: k pods of k/2 edge
// (leaf) and k/2 aggregation (spine) switches, (k/2)^2 core switches, k^3/4 hosts; 2 tiers: k
// leaves and k/2 spines, k^2/2 hosts. Adds leaf oversubscription (down:up) and partial
// population (fewer pods, fewer leaves, bundled core links; see clos_plane.hpp), spine
// oversubscription, leaf port breakout (one 400G port as two 200G server ports) and several NICs
// per server, each to its own leaf of a rail group (ByteDance MegaScale, NSDI 2024, section 3.4:
// eight 200G NICs on eight ToRs, 64 servers per ToR set). Simplifies: one switch radix everywhere.
#include <string>

#include "src/topology/clos_plane.hpp"
#include "src/topology/generator_registry.hpp"
#include "src/topology/nvlink_domain.hpp"

namespace stepsim::topology {
namespace {

class FatTree final : public Generator {
 public:
  [[nodiscard]] std::string name() const override { return "fat_tree"; }
  [[nodiscard]] std::string description() const override {
    return "k-ary fat-tree (Al-Fares 2008), 2 or 3 tiers; NICs per server on a rail group of "
           "leaves";
  }
  [[nodiscard]] std::vector<ParamSpec> params() const override {
    return {
        {"k", "switch radix (ports per switch); even", 2, 128, std::nullopt, ""},
        {"tiers", "2 (leaf/spine) or 3 (leaf/spine/core)", 2, 3, 3, ""},
        {"servers", "servers to build (fewer: fewer pods and leaves)", 1, 1 << 20, std::nullopt,
         "all that fit (3 tiers, one NIC, no breakout or spine oversubscription: k^3/4 x "
         "2r/(r+1))"},
        {"oversubscription", "leaf down:up port ratio r (k divisible by r+1)", 1, 16, 1, ""},
        {"gpus_per_server", "GPUs in a server", 1, 64, 1, ""},
        {"nics_per_server", "NICs per server, each on its own leaf; divides gpus_per_server", 1, 64,
         1, ""},
        {"spine_oversubscription", "spine down:up port ratio (3 tiers; k divisible by r+1)", 1, 16,
         1, ""},
        {"leaf_breakout", "server ports per leaf downlink port (2: a 400G port as 2 x 200G)", 1, 8,
         1, ""},
        nvlink_domain_param(),
    };
  }
  [[nodiscard]] std::vector<LinkClassSpec> link_classes() const override {
    return {{"server_leaf", "server NIC to leaf (edge) switch", CableKind::kDac, Length::m(3)},
            {"leaf_spine", "leaf to spine (aggregation)", CableKind::kAoc, Length::m(30)},
            {"spine_core", "spine to core (3 tiers)", CableKind::kOptics, Length::m(100)}};
  }
  [[nodiscard]] Result<Topology> build(const GeneratorParams& params,
                                       std::span<const LinkSpec> links,
                                       Topology topo) const override {
    const auto p = plan(params);
    if (!p) return p.error();
    topo.tier_names = {"server", "leaf", "spine", "core"};
    for (std::uint32_t s = 0; s < p->servers; ++s) {
      topo.add_node(NodeKind::kServer, 0, p->nics, p->shape.pod_of(s), 0, p->gpus);
    }
    const ClosLinks clos{links[0], links[1], links[2]};
    if (auto ok = check_breakout(params, p->shape, topo, clos); !ok) return ok.error();
    build_clos_plane(topo, p->shape, p->servers, 0, 0, clos);
    return topo;
  }
  [[nodiscard]] Result<TopologyCounts> counts(const GeneratorParams& params) const override {
    const auto p = plan(params);
    if (!p) return p.error();
    TopologyCounts c = clos_plane_counts(p->shape, p->servers);
    c.servers = p->servers;
    c.ports += std::uint64_t{p->servers} * p->nics;
    c.gpus = std::uint64_t{p->servers} * p->gpus;
    return c;
  }

 private:
  // The checked parameters: one plane whose rail groups take each server's NICs.
  using Plan = ClosPlan;
  static Result<Plan> plan(const GeneratorParams& params) {
    Plan p;
    p.gpus = static_cast<std::uint32_t>(params.get("gpus_per_server"));
    p.nics = static_cast<std::uint32_t>(params.get("nics_per_server"));
    if (auto bad = check_nics(params, p.gpus, p.nics); !bad) return bad.error();
    const auto shape = make_clos_shape(params, "k", p.nics, "nics_per_server");
    if (!shape) return shape.error();
    p.shape = *shape;
    const std::int64_t over = params.get("oversubscription");
    const std::string what = "a " + std::to_string(shape->tiers) +
                             "-tier k=" + std::to_string(shape->radix) + " fat-tree" +
                             (over > 1 ? " with oversubscription " + std::to_string(over) : "");
    const auto servers = clos_servers(params, *shape, what);
    if (!servers) return servers.error();
    p.servers = *servers;
    return p;
  }
};

const GeneratorRegistration kFatTree{[] { return std::make_unique<FatTree>(); }};

}  // namespace
}  // namespace stepsim::topology
