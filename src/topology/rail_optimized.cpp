// Rail-optimized multi-plane cluster (DOMAIN.md section 5; NVIDIA DGX SuperPOD-style rails):
// servers of G GPUs and G NICs, NIC i of every server on plane (rail) i; every plane is its own
// leaf/spine[/core] folded Clos of one switch radix, partially populated as needed (see
// clos_plane.hpp). Simplifies: planes are fully independent (cross-rail traffic must move over
// NVLink inside a server first, as NCCL's PXN does), one radix for all switches. NICs per server
// may be fewer than GPUs (8 GPUs, 2 NICs: GPUs 0-3 behind NIC 0's PCIe switch, 4-7 behind NIC
// 1's; topology::nic_of_gpu), one plane per NIC.
#include <string>

#include "src/topology/clos_plane.hpp"
#include "src/topology/generator_registry.hpp"
#include "src/topology/nvlink_domain.hpp"

namespace stepsim::topology {
namespace {

class RailOptimized final : public Generator {
 public:
  [[nodiscard]] std::string name() const override { return "rail_optimized"; }
  [[nodiscard]] TopologyTraits traits() const override { return {.rail_planes = true}; }
  [[nodiscard]] std::string description() const override {
    return "servers of G GPUs and N NICs, NIC i on plane i, one fat-tree (2 or 3 tiers) per plane";
  }
  [[nodiscard]] std::vector<ParamSpec> params() const override {
    return {
        {"servers", "servers in the cluster", 1, 1 << 20, std::nullopt, ""},
        {"gpus_per_server", "GPUs per server", 1, 64, 8, ""},
        {"nics_per_server", "NICs per server = planes; divides gpus_per_server", 1, 64,
         std::nullopt, "gpus_per_server (one NIC per GPU)"},
        {"switch_radix", "ports per switch; even (64: Tomahawk 5/6)", 2, 1024, 64, ""},
        {"tiers", "tiers per plane: 2 (leaf/spine) or 3 (leaf/spine/core)", 2, 3, 3, ""},
        {"oversubscription", "leaf down:up port ratio r (radix divisible by r+1)", 1, 16, 1, ""},
        {"spine_oversubscription", "spine down:up port ratio (3 tiers; radix divisible by r+1)", 1,
         16, 1, ""},
        {"leaf_breakout", "server ports per leaf downlink port (2: a 400G port as 2 x 200G)", 1, 8,
         1, ""},
        nvlink_domain_param(),
    };
  }
  [[nodiscard]] std::vector<LinkClassSpec> link_classes() const override {
    return {{"server_leaf", "server NIC to its rail's leaf", CableKind::kAoc, Length::m(20)},
            {"leaf_spine", "leaf to spine", CableKind::kOptics, Length::m(100)},
            {"spine_core", "spine to core (3 tiers)", CableKind::kOptics, Length::m(300)}};
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
    for (std::uint32_t plane = 0; plane < p->nics; ++plane) {
      build_clos_plane(topo, p->shape, p->servers, plane, static_cast<std::uint16_t>(plane), clos);
    }
    return topo;
  }
  [[nodiscard]] Result<TopologyCounts> counts(const GeneratorParams& params) const override {
    const auto p = plan(params);
    if (!p) return p.error();
    const TopologyCounts plane = clos_plane_counts(p->shape, p->servers);
    TopologyCounts c;
    c.servers = p->servers;
    c.switches = plane.switches * p->nics;
    c.edge_switches = plane.edge_switches * p->nics;
    c.ports = plane.ports * p->nics + std::uint64_t{p->servers} * p->nics;
    c.links = plane.links * p->nics;
    c.gpus = std::uint64_t{p->servers} * p->gpus;
    return c;
  }

 private:
  // The checked parameters: one plane per NIC.
  using Plan = ClosPlan;
  static Result<Plan> plan(const GeneratorParams& params) {
    Plan p;
    p.gpus = static_cast<std::uint32_t>(params.get("gpus_per_server"));
    p.nics = static_cast<std::uint32_t>(params.get_or("nics_per_server", p.gpus));
    if (auto bad = check_nics(params, p.gpus, p.nics); !bad) return bad.error();
    const auto shape = make_clos_shape(params, "switch_radix");
    if (!shape) return shape.error();
    p.shape = *shape;
    const std::string what = "one " + std::to_string(shape->tiers) + "-tier plane of radix-" +
                             std::to_string(shape->radix) + " switches";
    const auto servers = clos_servers(params, *shape, what);
    if (!servers) return servers.error();
    p.servers = *servers;
    return p;
  }
};

const GeneratorRegistration kRailOptimized{[] { return std::make_unique<RailOptimized>(); }};

}  // namespace
}  // namespace stepsim::topology
