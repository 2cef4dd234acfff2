#include "stepsim/nic/rdma_run.hpp"

#include <algorithm>

namespace stepsim::nic {

namespace {

double hit_percent(std::uint64_t hits, std::uint64_t misses) {
  return hits + misses > 0 ? 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses)
                           : 100.0;
}

}  // namespace

double RdmaSummary::ctx_hit_percent() const {
  return hit_percent(nic.ctx_hits, nic.ctx_misses);
}
double RdmaSummary::mtt_hit_percent() const {
  return hit_percent(nic.mtt_hits, nic.mtt_misses);
}

RdmaSummary summarize(const RdmaResults& results) {
  RdmaSummary s;
  for (const QpStats& q : results.endpoints) {
    stat::combine(s.qp, q);
    if (q.state == static_cast<std::uint64_t>(QpState::kError)) ++s.qps_in_error;
  }
  s.qp.state = 0;
  s.qp.error = 0;
  for (const NicStats& n : results.nics) stat::combine(s.nic, n);
  return s;
}

EngineTally EngineTally::of(const RdmaRun& run) {
  EngineTally t;
  t.windows = run.stats.windows;
  t.simulated_ps = run.stats.simulated.picoseconds();
  t.cut_weight = run.partition.cut_weight;
  t.total_weight = run.partition.total_weight;
  t.imbalance = run.partition.imbalance;
  t.events = run.stats.events;
  t.critical_events = run.stats.critical_events;
  if (!run.stats.per_rank.empty()) {
    t.sync_s = run.stats.per_rank[0].exchange_s + run.stats.per_rank[0].allreduce_s;
    t.compute_s = run.stats.per_rank[0].compute_s;
  }
  return t;
}

void EngineTally::add(const EngineTally& x) {
  windows += x.windows;
  simulated_ps += x.simulated_ps;
  cut_weight += x.cut_weight;
  total_weight += x.total_weight;
  imbalance = std::max(imbalance, x.imbalance);
  sync_s += x.sync_s;
  compute_s += x.compute_s;
  events += x.events;
  critical_events += x.critical_events;
}

double EngineTally::window_parallelism() const {
  return pdes::window_parallelism(events, critical_events);
}

double EngineTally::windows_per_us() const {
  return simulated_ps > 0 ? static_cast<double>(windows) * 1e6 / static_cast<double>(simulated_ps)
                          : 0.0;
}

double EngineTally::sync_us_per_window() const {
  return windows > 0 ? sync_s * 1e6 / static_cast<double>(windows) : 0.0;
}

double EngineTally::cut_share() const {
  return total_weight > 0 ? static_cast<double>(cut_weight) / static_cast<double>(total_weight)
                          : 0.0;
}

Result<RdmaRun> run_rdma(const topology::Topology& topo, const std::vector<Connection>& connections,
                         const NicParams& nic, fabric::FabricParams fabric, RdmaApp* app,
                         pdes::Sync& sync, pdes::EngineOptions engine_options,
                         fabric::InNetworkAgent* agent, fabric::FabricSamples* samples) {
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
  const fabric::Routing routing(topo);
  std::vector<std::pair<topology::PortId, topology::PortId>> pairs;
  pairs.reserve(connections.size());
  for (const Connection& c : connections) pairs.emplace_back(c.a, c.b);
  const pdes::LpGraph graph = fabric::traffic_lp_graph(topo, routing, pairs);
  auto engine = pdes::Engine::create(graph, sync, std::move(engine_options));
  if (!engine) return engine.error();
  fabric::FabricModel model(topo, routing, {}, fabric);
  RdmaHost host(nic, connections, app);
  model.set_host_model(&host);
  model.set_in_network(agent);
  model.set_samples(samples);
  RdmaRun run;
  run.partition = engine.value()->partition_quality();
  run.stats = engine.value()->run(model);
  run.fabric = model.collect(sync);
  run.summary = fabric::summarize(topo, run.fabric, {});
  run.rdma = host.collect(sync);
  return run;
}

}  // namespace stepsim::nic
