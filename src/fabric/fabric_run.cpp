#include "stepsim/fabric/fabric_run.hpp"

#include "stepsim/core/percentile.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::fabric {

FabricSummary summarize(const topology::Topology& topo, const FabricResults& r,
                        const std::vector<Flow>& flows) {
  FabricSummary s;
  std::vector<double> up;
  for (topology::PortId p = 0; p < r.ports.size(); ++p) {
    const PortStats& x = r.ports[p];
    s.packet_hops += x.packets;
    s.bytes += x.bytes;
    s.ecn_marks += x.ecn_marks;
    s.pause_frames += x.pause_sent;
    s.paused_ps += x.paused_ps;
    s.drops_buffer += x.drops_buffer;
    s.drops_fec += x.drops_fec;
    s.drops_link_down += x.drops_link_down;
    s.drops_unroutable += x.drops_unroutable;
    s.fec_corrected += x.fec_corrected;
    s.trimmed += x.trimmed;
    s.max_queue = std::max(s.max_queue, x.max_queue);
    if (x.first_mark_ps >= 0 && (s.first_mark_ps < 0 || x.first_mark_ps < s.first_mark_ps)) {
      s.first_mark_ps = x.first_mark_ps;
    }
    if (x.first_pause_ps >= 0 && (s.first_pause_ps < 0 || x.first_pause_ps < s.first_pause_ps)) {
      s.first_pause_ps = x.first_pause_ps;
    }
    const topology::Port& port = topo.ports[p];
    if (port.link == topology::kNone || topo.is_server(port.node)) continue;
    const topology::Node& me = topo.nodes[port.node];
    const topology::Node& peer = topo.nodes[topo.ports[port.peer].node];
    if (me.tier == 1 && peer.kind == topology::NodeKind::kSwitch && peer.tier > me.tier) {
      up.push_back(static_cast<double>(x.bytes));
    }
  }
  if (!up.empty()) {
    double sum = 0;
    double mx = 0;
    for (double b : up) {
      sum += b;
      mx = std::max(mx, b);
    }
    const double mean = sum / static_cast<double>(up.size());
    double var = 0;
    for (double b : up) var += (b - mean) * (b - mean);
    var /= static_cast<double>(up.size());
    s.uplink_max_over_mean = mean > 0 ? mx / mean : 1.0;
    s.uplink_cv = mean > 0 ? std::sqrt(var) / mean : 0.0;
  }
  s.flows = flows.size();
  std::vector<std::pair<std::int64_t, std::int64_t>> done;  // (start, end) of complete flows
  for (const Flow& f : flows) {
    const FlowRecord& fr = r.flows[f.id];
    if (fr.end_ps >= 0) done.emplace_back(f.start.picoseconds(), fr.end_ps);
  }
  summarize_completions(done, s);
  return s;
}

void summarize_completions(const std::vector<std::pair<std::int64_t, std::int64_t>>& done,
                           FabricSummary& s) {
  std::vector<double> fct;
  for (const auto& [start, end] : done) {
    fct.push_back(static_cast<double>(end - start) * 1e-6);
    s.last_byte_us = std::max(s.last_byte_us, static_cast<double>(end) * 1e-6);
  }
  s.flows_complete = fct.size();
  if (fct.empty()) return;
  std::sort(fct.begin(), fct.end());
  s.fct_p50_us = nearest_rank(fct, 0.50);
  s.fct_p99_us = nearest_rank(fct, 0.99);
  s.fct_max_us = fct.back();
}

Result<FabricRun> run_fabric(const topology::Topology& topo, const std::vector<Flow>& flows,
                             const FabricParams& params, pdes::Sync& sync,
                             pdes::EngineOptions engine_options, FabricSamples* samples) {
  if (auto ok = params.validate(); !ok) return ok.error();
  if (auto lb = make_load_balancer(params.lb, 0); !lb) return lb.error();
  if (params.routing == "valiant" && !topo.traits.global_links) {
    return Error{"valiant routing needs a dragonfly topology ('" + topo.name + "' is a " +
                 topo.generator + ")"};
  }
  if (auto ok = check_switch_buffer(params, topo); !ok) return ok.error();
  const pdes::LpGraph graph = topo.lp_graph();
  auto engine = pdes::Engine::create(graph, sync, std::move(engine_options));
  if (!engine) return engine.error();
  const Routing routing(topo);
  if (params.routing == "valiant" && routing.edge_switches() >= kNoDetour) {
    return Error{"valiant routing: '" + topo.name + "' has " +
                 std::to_string(routing.edge_switches()) + " edge switches (at most 65534)"};
  }
  FabricModel model(topo, routing, flows, params);
  model.set_samples(samples);
  FabricRun run;
  run.stats = engine.value()->run(model);
  run.results = model.collect(sync);
  run.summary = summarize(topo, run.results, flows);
  run.model_bytes = model.memory_bytes() + routing.memory_bytes();
  return run;
}

}  // namespace stepsim::fabric
