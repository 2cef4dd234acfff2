// The planner's compute-only bound on a step (src/plan/step_bound.hpp) and --prune: the bound is
// never above the step (every valid layout of a dense and an MoE search, at analytical fidelity
// and with free collectives; with the layers' collectives priced, never above the analytical
// step and the analytical step itself for one TP group), it is the step itself when collectives are
// free and the pipeline's stages are equal (1F1B's (m + p - 1)(f + b) plus the optimizer), and a
// pruned search ranks the same best --top as the full one while skipping layouts.
#include "src/plan/step_bound.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "src/cli/data_dir.hpp"
#include "src/cli/plan_scoring.hpp"
#include "src/plan/layout_space.hpp"
#include "src/plan/plan_search.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::plan {
namespace {

// Every collective free: the step is its compute and the pipeline's waits.
class FreeComm final : public workload::CommModel {
 public:
  Result<workload::CommCost> cost(const workload::CommOp& /*op*/) override {
    return workload::CommCost{};
  }
  [[nodiscard]] std::string name() const override { return "free"; }
};

struct Case {
  workload::Scenario s;
  topology::Topology topo;
};

Case load(const std::vector<std::string>& sets) {
  auto s = cli::load_scenario_file(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", sets);
  EXPECT_TRUE(s) << s.error().message;
  workload::Scenario sc = *s;
  sc.memory.check = "warn";
  auto topo = topology::load_topology(sc.topology);
  EXPECT_TRUE(topo) << topo.error().message;
  return {sc, *topo};
}

SpaceOptions space(const workload::Scenario& s, int gpus) {
  SpaceOptions o;
  o.gpus = gpus;
  o.nvlink = 8;
  o.global_batches = {s.par.global_batch};
  o.vpp = {1, 2};
  o.micro_batch = {1, 2};
  o.zero = {1, 3};
  return o;
}

double free_step(const workload::Scenario& s, const topology::Topology& topo) {
  FreeComm comm;
  auto r = workload::run_step_totals(s, topo, comm);
  EXPECT_TRUE(r) << r.error().message;
  return r ? r->step_s : 0;
}

// A dense model and an MoE one (8 experts, top 2; folded EP enumerated), also with moe.overlap
// 1f1b (its extra warm-up forward, EP hidden behind the partner pass), 16 GPUs.
const std::vector<std::vector<std::string>> kModels = {
    {"parallel.global_batch=16", "model.layers=8", "parallel.sequence_parallel=true"},
    {"parallel.global_batch=16", "model.layers=8", "model.experts=8", "model.top_k=2",
     "model.dense_layers=1", "moe.routing=zipf:0.8", "parallel.sequence_parallel=true"},
    {"parallel.global_batch=16", "model.layers=8", "model.experts=8", "model.top_k=2",
     "moe.overlap=1f1b", "parallel.sequence_parallel=true"}};

TEST(StepBound, NeverAboveTheStepAtAnalyticalFidelityOrWithFreeCollectives) {
  for (const auto& sets : kModels) {
    const Case c = load(sets);
    const auto cache = workload::make_analytical_cache(c.topo);
    int checked = 0;
    int tighter = 0;  // layouts whose priced bound is above the compute bound
    for (const Layout& l : enumerate_layouts(c.s, space(c.s, 16))) {
      auto s = layout_scenario(c.s, c.topo, l);
      if (!s) continue;
      const double bound = step_lower_bound(*s);
      auto o = run_analytical(*s, c.topo, cache);
      ASSERT_TRUE(o) << o.error().message;
      EXPECT_GT(bound, 0) << layout_text(l);
      EXPECT_LE(bound, o->step_s) << layout_text(l);
      // With the layers' always-exposed collectives priced by the analytical model: at least
      // the compute bound, never above the analytical step.
      const auto comm = workload::make_analytical_comm(c.topo, *s, cache);
      const double priced = step_lower_bound(*s, comm.get());
      EXPECT_GE(priced, bound) << layout_text(l);
      EXPECT_LE(priced, o->step_s) << layout_text(l);
      tighter += priced > bound * (1 + 1e-6) ? 1 : 0;
      EXPECT_LE(bound, free_step(*s, c.topo)) << layout_text(l);
      ++checked;
    }
    EXPECT_GT(checked, 100) << sets.back();
    EXPECT_GT(tighter, checked / 4) << sets.back();
  }
}

// One replica, one stage, TP 8 (no DP, PP or CP traffic): the analytical step is the compute
// plus what the TP collectives leave exposed (all of each without TP overlap; under overlap
// what the GEMM beside it does not cover), which is what the priced bound adds up.
TEST(StepBound, WithCollectivesIsTheAnalyticalStepOfOneTpGroup) {
  for (const char* ovl : {"parallel.tp_overlap=false", "parallel.tp_overlap=true"}) {
    for (const char* rc : {"parallel.recompute=none", "parallel.recompute=full"}) {
      const Case c =
          load({"parallel.global_batch=16", "model.layers=8", "parallel.tp=8", "parallel.pp=1",
                "parallel.dp=1", "parallel.zero=0", rc, "parallel.sequence_parallel=true", ovl});
      const auto cache = workload::make_analytical_cache(c.topo);
      auto o = run_analytical(c.s, c.topo, cache);
      ASSERT_TRUE(o) << o.error().message;
      const auto comm = workload::make_analytical_comm(c.topo, c.s, cache);
      const double priced = step_lower_bound(c.s, comm.get());
      EXPECT_NEAR(priced, o->step_s, 1e-7 * o->step_s) << ovl << " " << rc;
      EXPECT_GT(o->exposed_s[static_cast<std::size_t>(workload::CommGroup::kTp)], 0) << ovl;
      // The compute-only bound misses the exposed TP time.
      EXPECT_LT(step_lower_bound(c.s), o->step_s - 0.5 * o->exposed_s[0]) << ovl << " " << rc;
    }
  }
}

// The dense model on 16 GPUs without TP overlap (every TP collective exposed): pricing the
// layers' collectives prunes more layouts than the compute bound alone, with the same best 5.
TEST(StepBound, PricedCollectivesPruneMoreWithTheSameBestTop) {
  const Case c = load({"parallel.global_batch=16", "model.layers=8",
                       "parallel.sequence_parallel=true", "parallel.tp_overlap=false"});
  const std::vector<Layout> layouts = enumerate_layouts(c.s, space(c.s, 16));
  const int top = 5;
  cli::PlanSearch compute_only;
  cli::PlanSearch priced;
  for (cli::PlanSearch* p : {&compute_only, &priced}) {
    p->top = top;
    p->own = layout_of(c.s.par);
    cli::ScoringOptions o;
    o.prune = true;
    o.price_collectives = p == &priced;
    o.top = top;
    ASSERT_TRUE(cli::search_analytical(c.s, c.topo, layouts, o, {}, *p));
    cli::rank_rows(*p);
  }
  for (int i = 0; i < top; ++i) {
    const Candidate& a = compute_only.rows[static_cast<std::size_t>(i)];
    const Candidate& b = priced.rows[static_cast<std::size_t>(i)];
    EXPECT_EQ(layout_text(a.layout), layout_text(b.layout)) << "#" << i + 1;
    EXPECT_EQ(a.analytical.step_s, b.analytical.step_s);
  }
  EXPECT_GT(priced.pruned, compute_only.pruned);
}

TEST(StepBound, IsTheStepWithFreeCollectivesAndEqualStages) {
  // pp 1: the compute and the optimizer; pp 2 and 4 of 8 layers without interleaving: 1F1B's
  // fill and drain, (m + p - 1)(f + b), exactly the critical path.
  for (const auto& [pp, dp] :
       {std::pair{"parallel.pp=1", "parallel.dp=8"}, std::pair{"parallel.pp=2", "parallel.dp=4"},
        std::pair{"parallel.pp=4", "parallel.dp=2"}}) {
    for (const char* rc : {"parallel.recompute=none", "parallel.recompute=full"}) {
      const Case c = load({"parallel.global_batch=16", "model.layers=8", "parallel.tp=2", pp, dp,
                           rc, "parallel.sequence_parallel=true", "parallel.tp_overlap=true"});
      const double step = free_step(c.s, c.topo);
      EXPECT_NEAR(step_lower_bound(c.s), step, 1e-7 * step) << pp << " " << rc;
    }
  }
}

TEST(StepBound, PruningKeepsTheBestTopAndSkipsLayouts) {
  for (const auto& sets : kModels) {
    for (const std::string objective : {"tokens", "mfu"}) {
      const Case c = load(sets);
      const std::vector<Layout> layouts = enumerate_layouts(c.s, space(c.s, 16));
      const int top = 5;
      cli::PlanSearch full;
      cli::PlanSearch pruned;
      for (cli::PlanSearch* p : {&full, &pruned}) {
        p->objective = objective;
        p->top = top;
        p->own = layout_of(c.s.par);
        cli::ScoringOptions o;
        o.prune = p == &pruned;
        o.top = top;
        o.objective = objective;
        ASSERT_TRUE(cli::search_analytical(c.s, c.topo, layouts, o, {}, *p));
        cli::rank_rows(*p);
      }
      ASSERT_GE(full.rows.size(), static_cast<std::size_t>(top));
      for (int i = 0; i < top; ++i) {
        const Candidate& a = full.rows[static_cast<std::size_t>(i)];
        const Candidate& b = pruned.rows[static_cast<std::size_t>(i)];
        EXPECT_EQ(a.rank, i + 1);
        EXPECT_EQ(b.rank, i + 1);
        EXPECT_EQ(layout_text(a.layout), layout_text(b.layout)) << objective << " #" << i + 1;
        EXPECT_EQ(a.analytical.step_s, b.analytical.step_s);
      }
      EXPECT_GT(pruned.pruned, 0U) << objective;
      std::size_t scored = 0;
      for (const Candidate& r : pruned.rows) scored += r.scored ? 1 : 0;
      EXPECT_LT(scored, full.rows.size());
      EXPECT_LE(scored + pruned.pruned, full.rows.size());
      EXPECT_EQ(pruned.rows.size(), full.rows.size());
    }
  }
}

// DualPipe (moe.overlap dualpipe, 8 experts, EP over the data-parallel ranks): the bound (the
// shorter chain of first forwards, then every pass of the stage's schedule, then the
// optimizer) is positive and never above the step, analytical or with free collectives, on
// every valid layout; it prunes, and the pruned search ranks the same best 5.
TEST(StepBound, DualPipeNeverAboveTheStepAndPrunes) {
  const Case c = load({"parallel.global_batch=64", "model.layers=8", "model.experts=8",
                       "model.top_k=2", "moe.overlap=dualpipe", "parallel.sequence_parallel=true",
                       "parallel.pp=2", "parallel.dp=2", "parallel.tp=4"});
  const auto cache = workload::make_analytical_cache(c.topo);
  SpaceOptions o = space(c.s, 16);
  o.zero = {1, 2};
  o.vpp = {1};
  const std::vector<Layout> layouts = enumerate_layouts(c.s, o);
  int checked = 0;
  int piped = 0;  // layouts with pp > 1 (DualPipe's bidirectional pipeline)
  for (const Layout& l : layouts) {
    auto s = layout_scenario(c.s, c.topo, l);
    if (!s) continue;
    auto r = run_analytical(*s, c.topo, cache);
    ASSERT_TRUE(r) << r.error().message;
    const auto comm = workload::make_analytical_comm(c.topo, *s, cache);
    const double bound = step_lower_bound(*s);
    const double priced = step_lower_bound(*s, comm.get());
    EXPECT_GT(bound, 0) << layout_text(l);
    EXPECT_GE(priced, bound) << layout_text(l);
    EXPECT_LE(priced, r->step_s) << layout_text(l);
    EXPECT_LE(bound, free_step(*s, c.topo)) << layout_text(l);
    // What the bound leaves out is the bubble and the exposed time, never more than the step.
    EXPECT_GT(bound, 0.3 * free_step(*s, c.topo)) << layout_text(l);
    ++checked;
    piped += l.pp > 1 ? 1 : 0;
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(piped, 10);
  cli::PlanSearch full;
  cli::PlanSearch pruned;
  for (cli::PlanSearch* p : {&full, &pruned}) {
    p->top = 5;
    p->own = layout_of(c.s.par);
    cli::ScoringOptions so;
    so.prune = p == &pruned;
    so.top = 5;
    ASSERT_TRUE(cli::search_analytical(c.s, c.topo, layouts, so, {}, *p));
    cli::rank_rows(*p);
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(layout_text(full.rows[static_cast<std::size_t>(i)].layout),
              layout_text(pruned.rows[static_cast<std::size_t>(i)].layout))
        << "#" << i + 1;
  }
  EXPECT_GT(pruned.pruned, 0U);
}

}  // namespace
}  // namespace stepsim::plan
