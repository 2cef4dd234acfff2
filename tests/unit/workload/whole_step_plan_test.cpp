// The whole step's plan, built with no engine (the ideal model costs the folded collectives):
// placement, communicators and their connections against Placement's formulas, and rail
// folding's rules (what it folds, what it refuses and why).
#include "src/workload/whole_step/plan.hpp"
#include "src/workload/whole_step/whole_step.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::workload::whole_step {
namespace {

topology::Topology load(const std::string& name) {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + name + ".yaml")
      .value();
}

// The tiny GPT (TP 4, PP 2, DP 2 on 2 servers x 8 GPUs), run as the whole step.
Scenario tiny() {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", {});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  Scenario x = std::move(s).value();
  x.step_mode = "whole";
  return x;
}

struct Built {
  std::unique_ptr<CommModel> model;
  Result<StepPlan> plan;
};

Built build(const Scenario& s, const topology::Topology& topo) {
  const auto ok = validate(s, topo);
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  auto model = make_ideal_comm(topo, s);
  auto plan = make_plan(s, topo, {model.get()});
  return Built{std::move(model), std::move(plan)};
}

std::string refusal(const Scenario& s, const topology::Topology& topo) {
  Built b = build(s, topo);
  return b.plan ? std::string("(folded)") : b.plan.error().message;
}

TEST(WholeStepPlan, PlacesEveryRankByPlacementsFormula) {
  const auto topo = load("toy-2server");
  const Scenario s = tiny();
  Built b = build(s, topo);
  ASSERT_TRUE(b.plan.ok()) << b.plan.error().message;
  const StepPlan& p = *b.plan;
  ASSERT_EQ(p.jobs.size(), 1u);
  ASSERT_EQ(p.gpus.size(), 16u);
  const Placement& pl = p.jobs[0].place;
  EXPECT_EQ(pl.tp * pl.cp * pl.dp * pl.pp, 16);
  std::set<int> reference_stages;
  for (const GpuPlan& g : p.gpus) {
    ASSERT_TRUE(g.used);
    // One job alone: rank r is GPU r, at Placement's coordinates.
    EXPECT_EQ(g.rank, g.gpu);
    EXPECT_EQ(pl.rank(g.t, g.c, g.d, g.stage), g.rank);
    // The topology numbers GPUs server by server (8 a server).
    EXPECT_EQ(g.server, p.all.gpus[g.gpu].server);
    EXPECT_EQ(p.all.gpus[g.gpu].local, g.gpu % 8);
    EXPECT_EQ(g.reference, g.t == 0 && g.c == 0 && g.d == 0);
    if (g.reference) {
      EXPECT_TRUE(reference_stages.insert(g.stage).second);
    }
    EXPECT_EQ(g.mirror, kNone32);
    EXPECT_EQ(g.slowdown, 1.0);
  }
  EXPECT_EQ(reference_stages.size(), 2u);  // one reference GPU per stage
  // Both servers run GPUs: each lists its own, none twice.
  ASSERT_EQ(p.servers.size(), 2u);
  for (const ServerPlan& sp : p.servers) {
    EXPECT_EQ(sp.gpus.size(), 8u);
    for (std::uint32_t g : sp.gpus) {
      EXPECT_EQ(idx(p.server_index[p.gpus[g].server]),
                static_cast<std::size_t>(&sp - &p.servers[0]));
    }
  }
}

// The memory estimate of the step's own state (checked before the engine starts): every
// communicator's instances are records, each 16 B of atomics, 16 B in the collection's
// reduction and a CollectiveRecord in the trace; each connection a nic::Connection.
TEST(WholeStepPlan, StateEstimateCountsEveryRecordAndConnection) {
  const auto topo = load("toy-2server");
  Built b = build(tiny(), topo);
  ASSERT_TRUE(b.plan.ok()) << b.plan.error().message;
  const StepPlan& p = *b.plan;
  std::uint64_t instances = 0;
  for (const CommInfo& c : p.comms) instances += c.instances;
  EXPECT_EQ(p.records, instances);
  ASSERT_GT(p.records, 0u);
  ASSERT_GT(p.conns.size(), 0u);
  const double want = static_cast<double>(instances) * (16 + 16 + sizeof(CollectiveRecord)) +
                      static_cast<double>(p.conns.size()) * sizeof(nic::Connection);
  EXPECT_DOUBLE_EQ(whole_step_state_bytes(p.records, p.conns.size()), want);
  EXPECT_DOUBLE_EQ(whole_step_state_bytes(0, 0), 0.0);
}

TEST(WholeStepPlan, EveryGpuRunsEachOpOnItsOwnCopyOfTheGroup) {
  const auto topo = load("toy-2server");
  Built b = build(tiny(), topo);
  ASSERT_TRUE(b.plan.ok()) << b.plan.error().message;
  const StepPlan& p = *b.plan;
  const JobPlan& j = p.jobs[0];
  std::uint64_t instances = 0;
  for (const CommInfo& c : p.comms) instances += c.instances;
  EXPECT_EQ(p.records, instances);
  for (const GpuPlan& g : p.gpus) {
    const StageProgram& prog = j.progs[idx(g.stage)];
    for (std::uint32_t op = 0; op < prog.comm_ops.size(); ++op) {
      if (j.stage_op_ref[idx(g.stage)][op] == kNone32) continue;
      const CommInfo& c = p.comms[p.comm_of(g, op)];
      // The copy is the reference group moved to this GPU's (t, c, d), in the topology's GPUs.
      EXPECT_EQ(c.gpus, translate_group(j.place, prog.comm_ops[op].gpus, g.t, g.c, g.d));
      EXPECT_NE(std::find(c.gpus.begin(), c.gpus.end(), g.gpu), c.gpus.end());
      EXPECT_EQ(c.stage, g.stage);
      // Folded exactly when every member sits in one server.
      std::set<NodeId> servers;
      for (std::uint32_t m : c.gpus) servers.insert(p.gpus[m].server);
      EXPECT_EQ(c.folded, servers.size() == 1);
      EXPECT_EQ(c.local.size(), servers.size());
    }
  }
  // Pipeline sends: every GPU of stage 0 sends to its (t, c, d) on stage 1 and back, once per
  // micro-batch, across the two servers.
  std::size_t sends = 0;
  for (const auto& [key, ci] : p.pp_comm) {
    const CommInfo& c = p.comms[ci];
    ASSERT_EQ(c.gpus.size(), 2u);
    const GpuPlan& a = p.gpus[c.gpus[0]];
    const GpuPlan& z = p.gpus[c.gpus[1]];
    EXPECT_EQ(a.gpu, std::get<0>(key));
    EXPECT_EQ(z.stage, std::get<3>(key));
    EXPECT_NE(a.stage, z.stage);
    EXPECT_EQ(std::tie(a.t, a.c, a.d), std::tie(z.t, z.c, z.d));
    EXPECT_EQ(c.ref, kNone32);
    EXPECT_EQ(c.instances, static_cast<std::uint32_t>(j.s.par.micro_batches()));
    EXPECT_EQ(c.send_bytes, j.send_bytes);
    EXPECT_FALSE(c.folded);
    ++sends;
  }
  EXPECT_EQ(sends, 16u);  // 8 forward (stage 0 -> 1), 8 backward (1 -> 0)
}

TEST(WholeStepPlan, NetworkCommunicatorsOwnTheirConnectionsFoldedOnesNone) {
  const auto topo = load("toy-2server");
  // PP 1, DP 4 across the two servers: DP's groups are network collectives.
  Scenario s = tiny();
  s.par.pp = 1;
  s.par.dp = 4;
  Built b = build(s, topo);
  ASSERT_TRUE(b.plan.ok()) << b.plan.error().message;
  const StepPlan& p = *b.plan;
  ASSERT_EQ(p.conn_comm.size(), p.conns.size());
  std::size_t network = 0;
  std::set<std::uint32_t> owned;
  for (std::uint32_t ci = 0; ci < p.comms.size(); ++ci) {
    const CommInfo& c = p.comms[ci];
    if (c.folded) {
      EXPECT_TRUE(c.pool.empty());
      // Its cost is the folded model's (ideal: NCCL's formula, never zero for bytes moved).
      for (std::uint32_t q = 0; q < c.instances; ++q) {
        const CommOp op = p.op_of(ci, q);
        EXPECT_GE(p.folded_cost(c.job, op.kind, op.bytes, op.gpus.size()).seconds, 0.0);
      }
      continue;
    }
    ++network;
    EXPECT_FALSE(c.pool.empty());
    std::set<PortId> nics;
    for (std::uint32_t g : c.gpus) nics.insert(p.all.gpus[g].nic);
    for (const auto& [ab, conns] : c.pool) {
      EXPECT_TRUE(nics.count(ab.first) == 1 && nics.count(ab.second) == 1);
      for (std::uint32_t k : conns) {
        EXPECT_EQ(p.conn_comm[k], ci);
        EXPECT_EQ(p.conns[k].a, ab.first);
        EXPECT_EQ(p.conns[k].b, ab.second);
        EXPECT_GE(p.conns[k].entropy, 49152);  // NCCL's source ports: the top quarter
        EXPECT_TRUE(owned.insert(k).second);   // no connection is shared
      }
    }
    // Every collective it runs has its parameters chosen in the plan.
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const CommOp op = p.op_of(ci, q);
      EXPECT_FALSE(p.params_at(ci, op.kind, op.bytes).algorithm.empty());
    }
  }
  EXPECT_EQ(network, 4u);  // one DP group per TP rank, each across both servers
  EXPECT_EQ(owned.size(), p.conns.size());
}

TEST(WholeStepPlan, RailFoldingRunsRailZeroAndMirrorsTheOthers) {
  const auto topo = load("toy-2server");
  Scenario none = tiny();
  Built all = build(none, topo);
  ASSERT_TRUE(all.plan.ok()) << all.plan.error().message;
  // step.fold none: every GPU runs, and the plan says what rails would fold.
  EXPECT_EQ(all.plan->rails, 1u);
  EXPECT_EQ(all.plan->foldable, 8u);
  Scenario rails = tiny();
  rails.step_fold = "rails";
  Built folded = build(rails, topo);
  ASSERT_TRUE(folded.plan.ok()) << folded.plan.error().message;
  const StepPlan& p = *folded.plan;
  EXPECT_EQ(p.rails, 8u);
  for (const GpuPlan& g : p.gpus) {
    const collective::Gpu& at = p.all.gpus[g.gpu];
    if (at.local == 0) {
      EXPECT_EQ(g.mirror, kNone32);
      continue;
    }
    // Mirrors the rail-0 GPU of its server, of its stage.
    ASSERT_NE(g.mirror, kNone32);
    EXPECT_EQ(p.all.gpus[g.mirror].local, 0u);
    EXPECT_EQ(p.gpus[g.mirror].server, g.server);
    EXPECT_EQ(p.gpus[g.mirror].stage, g.stage);
  }
  for (const ServerPlan& sp : p.servers) {
    ASSERT_EQ(sp.gpus.size(), 1u);  // only rail 0 runs
    EXPECT_EQ(p.all.gpus[sp.gpus[0]].local, 0u);
  }
  // A mirror communicator takes its rail-0 copy's records: same instances, rep not a mirror.
  std::size_t mirrors = 0;
  for (const CommInfo& c : p.comms) {
    if (!c.mirror) continue;
    ++mirrors;
    ASSERT_NE(c.rep, kNone32);
    EXPECT_FALSE(p.comms[c.rep].mirror);
    EXPECT_EQ(p.comms[c.rep].instances, c.instances);
    EXPECT_TRUE(c.pool.empty());
  }
  EXPECT_GT(mirrors, 0u);
  // The 16 pipeline sends each have their connections unfolded; folded, only rail 0's two do.
  EXPECT_EQ(p.conns.size() * 8, all.plan->conns.size());
}

TEST(WholeStepPlan, RailFoldingRefusesWhatMakesTheRailsDiffer) {
  const auto toy = load("toy-2server");
  Scenario base = tiny();
  base.step_fold = "rails";
  {
    Scenario s = base;
    s.slow_gpus = {{3, 1.5}};
    EXPECT_NE(refusal(s, toy).find("a straggler (--slow-gpu) makes its rail differ"),
              std::string::npos);
  }
  {
    Scenario s = base;
    s.background.push_back(Scenario::Background{"permutation", DataRate::gbps(10), SimTime::us(1)});
    EXPECT_NE(refusal(s, toy).find("background traffic crosses the rails"), std::string::npos);
  }
  {
    // DP 16: the one DP group joins every rail.
    Scenario s = base;
    s.par.tp = 1;
    s.par.pp = 1;
    s.par.dp = 16;
    s.par.global_batch = 16;
    EXPECT_NE(refusal(s, toy).find("joins GPUs of rails 0 and 1"), std::string::npos);
  }
  {
    // PP 4 of 4 GPUs: stage 1 sits on rails 4..7 of server 0, whose rail-0 GPU is stage 0's.
    Scenario s = base;
    s.par.tp = 4;
    s.par.pp = 4;
    s.par.dp = 1;
    EXPECT_NE(refusal(s, toy).find("GPU 4 has no rail-0 GPU of its stage in its server"),
              std::string::npos);
  }
  {
    // Two GPUs behind each NIC: rail 0 would stand for traffic it shares.
    Scenario s = base;
    s.topology = std::string(STEPSIM_SOURCE_DIR) + "/topologies/rail-2nic-16gpu-400g.yaml";
    EXPECT_NE(refusal(s, load("rail-2nic-16gpu-400g")).find("GPUs 0 and 1 share a NIC"),
              std::string::npos);
  }
  {
    // No separate rail planes: a fat tree (one GPU a server).
    Scenario s = base;
    s.par.tp = 1;
    s.par.pp = 1;
    s.par.dp = 16;
    s.par.global_batch = 16;
    const std::string msg = refusal(s, load("fat-tree-k4"));
    EXPECT_NE(msg.find("has no separate rail planes; it needs kind rail_optimized"),
              std::string::npos)
        << msg;
  }
  // Folding reads the topology's traits, not its generator's name: the same rail-optimized
  // cluster without the rail-planes trait is refused, and a fat tree that declared rail planes
  // would fold.
  {
    topology::Topology no_planes = toy;
    ASSERT_TRUE(no_planes.traits.rail_planes);
    no_planes.traits.rail_planes = false;
    EXPECT_NE(refusal(base, no_planes).find("has no separate rail planes"), std::string::npos);
  }
  // Every refusal names the way out; with step.fold none the same scenarios run unfolded.
  Scenario s = base;
  s.slow_gpus = {{3, 1.5}};
  EXPECT_NE(refusal(s, toy).find("; use step.fold none"), std::string::npos);
  s.step_fold = "none";
  Built b = build(s, toy);
  ASSERT_TRUE(b.plan.ok());
  EXPECT_EQ(b.plan->foldable, 1u);
  EXPECT_EQ(b.plan->rails, 1u);
  EXPECT_EQ(b.plan->gpus[3].slowdown, 1.5);
}

// moe.overlap dualpipe: the mirrored copies' all-reduce is one group of two stages. Each GPU
// of stage 0 and the GPU of stage 1 at its TP, CP and DP coordinates share one communicator,
// reached through their own stage's op, run once; pipeline sends run half the micro-batches
// each (one direction's).
TEST(WholeStepPlan, DualPipesMirrorGroupSpansTwoStages) {
  const auto topo = load("toy-2server");
  Scenario s = tiny();
  s.model.experts = 8;
  s.model.top_k = 2;
  s.model.ffn = 1024;
  s.par.ep = 2;
  s.par.global_batch = 32;
  s.moe.overlap = "dualpipe";
  Built b = build(s, topo);
  ASSERT_TRUE(b.plan.ok()) << b.plan.error().message;
  const StepPlan& p = *b.plan;
  const JobPlan& j = p.jobs[0];
  std::set<std::uint32_t> mirrors;
  for (const GpuPlan& g : p.gpus) {
    const StageProgram& prog = j.progs[static_cast<std::size_t>(g.stage)];
    const CommOp& last = prog.comm_ops[prog.dp[prog.param_gather_first - 1]];
    ASSERT_EQ(last.gpus.size(), 2u);  // the mirror all-reduce, the last before the optimizer
    const std::uint32_t c = p.comm_of(g, prog.dp[prog.param_gather_first - 1]);
    const CommInfo& ci = p.comms[c];
    const std::uint32_t other = g.rank + (g.stage == 0 ? 8u : 0u) - (g.stage == 1 ? 8u : 0u);
    EXPECT_EQ(ci.gpus,
              (std::vector<std::uint32_t>{std::min(g.gpu, other), std::max(g.gpu, other)}));
    EXPECT_EQ(ci.instances, 1u);
    EXPECT_EQ(p.op_of(c, 0).bytes, last.bytes);
    mirrors.insert(c);
  }
  EXPECT_EQ(mirrors.size(), 8u);
  std::size_t sends = 0;
  for (const auto& [key, c] : p.pp_comm) {
    EXPECT_EQ(p.comms[c].instances, 8u);  // 16 micro-batches, half from each end
    ++sends;
  }
  EXPECT_GT(sends, 0u);
}

}  // namespace
}  // namespace stepsim::workload::whole_step
