// k-ary fat-tree (Al-Fares, Loukissas, Vahdat, SIGCOMM 2008). 3 tiers: k pods of k/2 edge
// (leaf) and k/2 aggregation (spine) switches, (k/2)^2 core switches, k^3/4 hosts; 2 tiers: k
// leaves and k/2 spines, k^2/2 hosts. Adds leaf oversubscription (down:up) and partial
// population (fewer pods, fewer leaves, bundled core links; see clos_plane.hpp).
// Simplifies: one NIC per server (its GPUs share it), one switch radix everywhere,
// oversubscription only at the leaves.
#include <string>

#include "src/topology/clos_plane.hpp"
#include "src/topology/generator_registry.hpp"

namespace stepsim::topology {
namespace {

class FatTree final : public Generator {
 public:
  [[nodiscard]] std::string name() const override { return "fat_tree"; }
  [[nodiscard]] std::string description() const override {
    return "k-ary fat-tree (Al-Fares 2008), 2 or 3 tiers, one NIC per server";
  }
  [[nodiscard]] std::vector<ParamSpec> params() const override {
    return {
        {"k", "switch radix (ports per switch); even", 2, 128, std::nullopt, ""},
        {"tiers", "2 (leaf/spine) or 3 (leaf/spine/core)", 2, 3, 3, ""},
        {"servers", "servers to build (fewer: fewer pods and leaves)", 1, 1 << 20, std::nullopt,
         "all that fit (3 tiers: k^3/4 x 2r/(r+1))"},
        {"oversubscription", "leaf down:up port ratio r (k divisible by r+1)", 1, 16, 1, ""},
        {"gpus_per_server", "GPUs in a server (all behind its one NIC)", 1, 64, 1, ""},
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
    const auto shape = make_clos_shape(params, "k");
    if (!shape) return shape.error();
    const std::int64_t over = params.get("oversubscription");
    const std::string what = "a " + std::to_string(shape->tiers) +
                             "-tier k=" + std::to_string(shape->radix) + " fat-tree" +
                             (over > 1 ? " with oversubscription " + std::to_string(over) : "");
    const auto servers = clos_servers(params, *shape, what);
    if (!servers) return servers.error();
    const auto gpus = static_cast<std::uint32_t>(params.get("gpus_per_server"));
    topo.tier_names = {"server", "leaf", "spine", "core"};
    for (std::uint32_t s = 0; s < *servers; ++s) {
      topo.add_node(NodeKind::kServer, 0, 1, shape->pod_of(s), 0, gpus);
    }
    build_clos_plane(topo, *shape, *servers, 0, 0, ClosLinks{links[0], links[1], links[2]});
    return topo;
  }
};

const GeneratorRegistration kFatTree{std::make_unique<FatTree>()};

}  // namespace
}  // namespace stepsim::topology
