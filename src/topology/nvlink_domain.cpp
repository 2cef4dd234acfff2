// Rack-scale NVLink domains. The simulator's NVLink unit is the server node: its GPUs reach
// each other over NVLink (collectives, placement and the step treat the node's GPUs as one
// NVLink domain), its NICs reach the fabric. A rack such as GB200 NVL72 (NVIDIA's GB200 NVL72
// data sheet: 72 GPUs on 9 NVLink switch trays, 18 compute trays of 4 GPUs, each compute tray
// with its own NICs) is therefore one node of 72 GPUs whose NICs are the trays' NICs, cabled
// exactly as the generator cables each tray. Joining after the build keeps each generator's
// wiring (leaves, planes, rail groups) per tray and works for all of them.
#include "src/topology/nvlink_domain.hpp"

#include <string>
#include <vector>

#include "stepsim/core/fatal.hpp"

namespace stepsim::topology {

ParamSpec nvlink_domain_param() {
  return {"nvlink_domain",
          "GPUs on one NVLink switch fabric (72: GB200/GB300 NVL72, 18 servers of 4); a "
          "multiple of gpus_per_server",
          1,
          1024,
          std::nullopt,
          "gpus_per_server (the server)"};
}

namespace {

// Checks D against the servers' size and count; returns the servers per domain.
Result<std::uint32_t> domain_servers(const GeneratorParams& params, std::uint32_t gpus,
                                     std::size_t servers) {
  const auto d = static_cast<std::uint32_t>(params.get("nvlink_domain"));
  if (gpus == 0 || d % gpus != 0) {
    return params.error("nvlink_domain", std::to_string(d) +
                                             " is not a whole number of servers of " +
                                             std::to_string(gpus) +
                                             " GPUs (allowed: a multiple of gpus_per_server)");
  }
  const std::uint32_t per = d / gpus;
  if (servers % per != 0) {
    return params.error("nvlink_domain",
                        std::to_string(d) + " GPUs = " + std::to_string(per) + " servers per " +
                            "domain, which do not divide the " + std::to_string(servers) +
                            " servers (give a multiple of " + std::to_string(per) + " servers)");
  }
  return per;
}

}  // namespace

Result<bool> join_nvlink_domain_counts(const GeneratorParams& params, TopologyCounts& counts) {
  if (!params.has("nvlink_domain") || counts.servers == 0) return true;
  const auto gpus = static_cast<std::uint32_t>(counts.gpus / counts.servers);
  const auto per = domain_servers(params, gpus, counts.servers);
  if (!per) return per.error();
  counts.servers /= *per;
  return true;
}

Result<bool> join_nvlink_domains(const GeneratorParams& params, Topology& topo) {
  if (!params.has("nvlink_domain")) return true;
  const std::size_t servers = topo.server_count();
  if (servers == 0) return true;
  const auto per = domain_servers(params, topo.nodes[0].gpus, servers);
  if (!per) return per.error();
  if (*per == 1) return true;
  const std::size_t domains = servers / *per;
  std::vector<Node> nodes;
  nodes.reserve(topo.nodes.size() - servers + domains);
  for (std::size_t d = 0; d < domains; ++d) {
    Node n = topo.nodes[d * *per];
    for (std::uint32_t k = 1; k < *per; ++k) {
      const Node& s = topo.nodes[d * *per + k];
      STEPSIM_CHECK(s.kind == NodeKind::kServer && s.first_port == n.first_port + n.port_count,
                    "a generator numbered servers out of order");
      n.port_count += s.port_count;
      n.gpus += s.gpus;
    }
    nodes.push_back(n);
  }
  nodes.insert(nodes.end(), topo.nodes.begin() + static_cast<std::ptrdiff_t>(servers),
               topo.nodes.end());
  topo.nodes = std::move(nodes);
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    const Node& n = topo.nodes[v];
    for (std::uint32_t i = 0; i < n.port_count; ++i) {
      Port& p = topo.ports[n.first_port + i];
      p.node = v;
      p.index = i;
    }
  }
  topo.servers_per_domain = *per;
  return true;
}

}  // namespace stepsim::topology
