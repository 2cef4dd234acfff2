// The plan's RC connections, background flows and folded collectives' costs (plan_build.hpp).
#include <algorithm>

#include "src/workload/whole_step/plan_build.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/fabric/traffic.hpp"

namespace stepsim::workload::whole_step {
namespace {

// The parameters communicator `comm` runs (kind, bytes) with (chosen once, kept in the plan).
Result<const collective::CollectiveParams*> params_for(StepPlan& p, const Scenario& s,
                                                       const topology::Topology& topo,
                                                       std::uint32_t comm, collective::Kind kind,
                                                       std::int64_t bytes) {
  const auto key = std::make_tuple(comm, static_cast<int>(kind), bytes);
  if (auto it = p.params_of.find(key); it != p.params_of.end()) return &p.params[it->second];
  const CommInfo& ci = p.comms[comm];
  collective::CollectiveParams cp0 = collective::applicable_params(
      s.coll,
      collective::CollectiveShape::of(kind, bytes, ci.comm.size(), ci.comm.gpus_per_server));
  collective::CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  collective::Choice choice;
  auto chosen = collective::prepare_collective(topo, ci.comm, spec, cp0, s.fabric, choice);
  if (!chosen) return chosen.error();
  collective::CollectiveParams cp = std::move(chosen).value();
  if (!collective::runs_concurrently(cp, kind)) cp.algorithm = "ring";
  p.params_of.emplace(key, p.params.size());
  p.params.push_back(std::move(cp));
  return &p.params.back();
}

// The most connections any collective of network communicator `ci` asks for, by pair of NICs.
Result<std::map<std::pair<PortId, PortId>, std::size_t>> most_connections(
    StepPlan& p, const Scenario& s, const topology::Topology& topo, std::uint32_t ci) {
  const CommInfo& c = p.comms[ci];
  std::map<std::pair<collective::Kind, std::int64_t>, bool> seen;
  std::map<std::pair<PortId, PortId>, std::size_t> most;
  for (std::uint32_t q = 0; q < c.instances; ++q) {
    const CommOp op = p.op_of(ci, q);
    if (!seen.emplace(std::make_pair(op.kind, op.bytes), true).second) continue;
    auto params = params_for(p, s, topo, ci, op.kind, op.bytes);
    if (!params) return params.error();
    collective::CollectiveSpec spec;
    spec.kind = op.kind;
    spec.bytes = op.bytes;
    collective::CollectiveApp app(c.comm, spec, **params);
    std::map<std::pair<PortId, PortId>, std::size_t> count;
    for (const nic::Connection& cn : app.connections()) ++count[{cn.a, cn.b}];
    for (const auto& [ab, n] : count) most[ab] = std::max(most[ab], n);
  }
  return most;
}

}  // namespace

Result<bool> build_connections(StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  for (std::uint32_t ci = 0; ci < p.comms.size(); ++ci) {
    auto comm = collective::make_communicator(topo, p.comms[ci].gpus);
    if (!comm) return comm.error();
    p.comms[ci].comm = std::move(comm).value();
    if (p.comms[ci].folded || p.comms[ci].mirror) continue;
    auto most = most_connections(p, s, topo, ci);
    if (!most) return most.error();
    for (const auto& [ab, n] : *most) {
      for (std::size_t k = 0; k < n; ++k) {
        nic::Connection cn;
        cn.a = ab.first;
        cn.b = ab.second;
        cn.prio = s.coll.prio;
        // Own entropy per connection (hash of communicator, ends and ordinal), as NCCL's QPs.
        const std::uint64_t h =
            hash_combine(hash_combine(hash_combine(ci, ab.first), ab.second), k);
        cn.entropy = static_cast<std::uint16_t>(49152 + h % 16384);
        cn.label = static_cast<std::uint32_t>(h >> 44);
        p.comms[ci].pool[ab].push_back(static_cast<std::uint32_t>(p.conns.size()));
        p.conns.push_back(cn);
        p.conn_comm.push_back(ci);
      }
    }
  }
  return true;
}

// Background traffic: each pattern's flows (fabric::make_flows over every NIC of the topology),
// one connection each, writing messages at the pattern's rate.
Result<bool> build_background(StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  std::uint32_t seed = 1;
  for (const Scenario::Background& b : s.background) {
    fabric::TrafficSpec spec;
    spec.pattern = b.pattern;
    spec.seed = seed++;
    auto flows = fabric::make_flows(topo, spec);
    if (!flows) return Error{"--background: " + flows.error().message};
    const SimTime gap = b.rate.serialization_time(Bytes(s.background_message));
    for (const fabric::Flow& f : *flows) {
      const NodeId src = topo.ports[f.src_nic].node;
      if (p.server_index[src] < 0) {
        p.server_index[src] = static_cast<std::int32_t>(p.servers.size());
        p.servers.emplace_back();
      }
      nic::Connection cn;
      cn.a = f.src_nic;
      cn.b = f.dst_nic;
      cn.prio = s.coll.prio;
      cn.entropy = f.entropy;
      cn.label = f.label;
      p.servers[idx(p.server_index[src])].background.push_back(
          static_cast<std::uint32_t>(p.background.size()));
      p.background.push_back(
          BackgroundFlow{static_cast<std::uint32_t>(p.conns.size()), gap, b.until});
      p.conns.push_back(cn);
      p.conn_comm.push_back(kBackgroundComm);
    }
  }
  return true;
}

// NVLink is the same in every server, so one run stands for all copies (a job's own model: its
// TP/CP copies).
Result<bool> cost_folded(StepPlan& p, const std::vector<CommModel*>& models) {
  for (std::uint32_t ci = 0; ci < p.comms.size(); ++ci) {
    const CommInfo& c = p.comms[ci];
    if (!c.folded || c.mirror) continue;
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const CommOp op = p.op_of(ci, q);
      const auto key = std::make_tuple(c.job, static_cast<int>(op.kind), op.bytes, op.gpus.size());
      if (p.folded.count(key) != 0) continue;
      auto cost = models[c.job]->cost(op);
      if (!cost) return cost.error();
      if (cost->stopped) return Error{"the step was interrupted"};
      p.folded.emplace(key, *cost);
    }
  }
  return true;
}

}  // namespace stepsim::workload::whole_step
