// step.fold rails (plan_build.hpp): on a rail-optimized fabric every rail is its own plane of
// switches, so a job whose network collectives each stay on one rail runs the same on every
// rail, up to each plane's own random draws (ECMP hashes, bit errors). Only rail 0's GPUs run;
// each other GPU mirrors the rail-0 GPU of its server. Refuses what makes the rails differ.
#include <algorithm>
#include <string>

#include "src/workload/whole_step/plan_build.hpp"

namespace stepsim::workload::whole_step {
namespace {

Error fold_refused(const std::string& why) {
  return Error{"step.fold rails: " + why + "; use step.fold none"};
}

// What the scenario and the topology must be for the rails to run alike.
Result<bool> rails_alike(const StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  if (p.jobs.size() != 1) return fold_refused("several jobs share the fabric");
  if (!s.background.empty()) return fold_refused("background traffic crosses the rails");
  if (!s.slow_gpus.empty()) return fold_refused("a straggler (--slow-gpu) makes its rail differ");
  if (!s.fabric.faults.empty()) return fold_refused("a link fault makes its plane differ");
  if (!s.nic.pcie_faults.empty()) return fold_refused("a NIC fault makes its rail differ");
  if (!topo.traits.rail_planes) {
    return fold_refused("topology " + topo.name + " (kind " + topo.generator +
                        ") has no separate rail planes; it needs kind rail_optimized");
  }
  return true;
}

// Every GPU off rail 0 mirrors the rail-0 GPU of its server (of its stage); p.rails: the rails.
Result<bool> fold_rails(StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  if (auto ok = rails_alike(p, s, topo); !ok) return ok;
  std::map<NodeId, std::uint32_t> rail0;  // server -> its rail-0 GPU
  std::map<PortId, std::uint32_t> nic_user;
  std::uint32_t rails = 1;
  for (const GpuPlan& r : p.gpus) {
    if (!r.used) continue;
    const collective::Gpu& g = p.all.gpus[r.gpu];
    if (auto [it, fresh] = nic_user.emplace(g.nic, r.gpu); !fresh) {
      return fold_refused("GPUs " + std::to_string(it->second) + " and " + std::to_string(r.gpu) +
                          " share a NIC");
    }
    if (g.local == 0) rail0[g.server] = r.gpu;
    rails = std::max(rails, g.local + 1);
  }
  for (GpuPlan& r : p.gpus) {
    if (!r.used || p.all.gpus[r.gpu].local == 0) continue;
    auto it = rail0.find(r.server);
    if (it == rail0.end() || p.gpus[it->second].stage != r.stage || r.reference) {
      return fold_refused("GPU " + std::to_string(r.gpu) +
                          " has no rail-0 GPU of its stage in its server");
    }
    r.mirror = it->second;
  }
  p.rails = rails;
  return true;
}

// Every network communicator stays on one rail; those of the other rails are mirrors, each with
// its rail-0 copy (the same reference group's, or pipeline send's, on the rail-0 GPU of its
// first GPU's server), whose records it takes.
Result<bool> fold_comms(StepPlan& p) {
  for (CommInfo& c : p.comms) {
    const std::uint32_t rail = p.all.gpus[c.gpus[0]].local;
    c.mirror = true;
    for (std::uint32_t g : c.gpus) {
      if (!c.folded && p.all.gpus[g].local != rail) {
        return fold_refused("a network collective of stage " + std::to_string(c.stage) +
                            " joins GPUs of rails " + std::to_string(rail) + " and " +
                            std::to_string(p.all.gpus[g].local));
      }
      c.mirror = c.mirror && p.gpus[g].mirror != kNone32;
    }
    if (c.folded && c.ref == kNone32) return fold_refused("a pipeline send stays in a server");
    if (!c.mirror || c.ref == kNone32) continue;
    const GpuPlan& m = p.gpus[p.gpus[c.gpus[0]].mirror];
    const JobPlan& j = p.jobs[c.job];
    c.rep = p.refs[c.ref].comms[idx(static_cast<int>(m.rank) - m.stage * j.per_stage)];
  }
  for (const auto& [key, ci] : p.pp_comm) {
    if (!p.comms[ci].mirror) continue;
    auto k = key;
    std::get<0>(k) = p.gpus[std::get<0>(key)].mirror;
    if (auto it = p.pp_comm.find(k); it != p.pp_comm.end()) p.comms[ci].rep = it->second;
  }
  for (const CommInfo& c : p.comms) {
    if (c.mirror &&
        (c.rep == kNone32 || p.comms[c.rep].instances != c.instances || p.comms[c.rep].mirror)) {
      return fold_refused("a collective of stage " + std::to_string(c.stage) +
                          " has no rail-0 copy");
    }
  }
  return true;
}

}  // namespace

Result<bool> fold(StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  Result<bool> ok = fold_rails(p, s, topo);
  if (ok) ok = fold_comms(p);
  if (s.step_fold == "rails") {
    if (!ok) return ok;
    for (ServerPlan& sp : p.servers) {  // mirrors never run
      std::erase_if(sp.gpus, [&](std::uint32_t g) { return p.gpus[g].mirror != kNone32; });
    }
    return true;
  }
  p.foldable = ok ? p.rails : 1;
  for (GpuPlan& r : p.gpus) r.mirror = kNone32;
  for (CommInfo& c : p.comms) {
    c.mirror = false;
    c.rep = kNone32;
  }
  p.rails = 1;
  return true;
}

}  // namespace stepsim::workload::whole_step
