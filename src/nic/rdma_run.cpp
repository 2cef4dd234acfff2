#include "stepsim/nic/rdma_run.hpp"

namespace stepsim::nic {

Result<RdmaRun> run_rdma(const topology::Topology& topo, const std::vector<Connection>& connections,
                         const NicParams& nic, fabric::FabricParams fabric, RdmaApp* app,
                         pdes::Sync& sync, pdes::EngineOptions engine_options) {
  if (auto ok = nic.validate(); !ok) return ok.error();
  configure_fabric(nic, fabric);
  if (auto ok = fabric.validate(); !ok) return ok.error();
  if (auto lb = fabric::make_load_balancer(fabric.lb, 0); !lb) return lb.error();
  if (auto made =
          cc::make_congestion_control(nic.cc, cc::CcPath{DataRate::gbps(100), SimTime::us(1)});
      !made) {
    return made.error();
  }
  for (const Connection& c : connections) {
    for (topology::PortId p : {c.a, c.b}) {
      if (p >= topo.ports.size() || !topo.is_server(topo.ports[p].node)) {
        return Error{"connection endpoint " + std::to_string(p) + " is not a server's NIC port"};
      }
    }
    if (c.a == c.b) return Error{"a connection needs two different NIC ports"};
  }
  for (const PcieFault& f : nic.pcie_faults) {
    if (f.nic >= topo.ports.size() || !topo.is_server(topo.ports[f.nic].node)) {
      return Error{"a PCIe fault names port " + std::to_string(f.nic) +
                   ", which is not a server's NIC port"};
    }
  }
  const pdes::LpGraph graph = topo.lp_graph();
  auto engine = pdes::Engine::create(graph, sync, std::move(engine_options));
  if (!engine) return engine.error();
  const fabric::Routing routing(topo);
  fabric::FabricModel model(topo, routing, {}, fabric);
  RdmaHost host(nic, connections, app);
  model.set_host_model(&host);
  RdmaRun run;
  run.stats = engine.value()->run(model);
  run.fabric = model.collect(sync);
  run.summary = fabric::summarize(topo, run.fabric, {});
  run.rdma = host.collect(sync);
  return run;
}

}  // namespace stepsim::nic
