// The reduction of a step's trace (summarize_step) on a hand-built trace: the critical stage and
// its time split, per-group counts, mean busbw and bytes, fabric counters summed once per
// distinct collective, percentiles over the network groups only, flows and links times the
// repetitions, the stop reason, and a digest that depends on the collectives' costs.
#include "stepsim/workload/step_summary.hpp"

#include <gtest/gtest.h>

#include "tests/support/small_topologies.hpp"

namespace stepsim::workload {
namespace {

CollectiveRecord coll(std::uint32_t id, CommGroup g, std::int64_t bytes, double start, double end,
                      double busbw) {
  CollectiveRecord c;
  c.id = id;
  c.group = g;
  c.bytes = bytes;
  c.start_s = start;
  c.end_s = end;
  c.busbw_gbs = busbw;
  return c;
}

StepTrace trace() {
  StepTrace t;
  t.stages.resize(3);
  t.stages[0].t = 5;
  t.stages[1].t = 7;  // the critical stage
  t.stages[1].compute = 4;
  t.stages[1].bubble = 1;
  t.stages[1].optimizer = 0.5;
  t.stages[1].exposed[static_cast<int>(CommGroup::kTp)] = 1;
  t.stages[1].exposed[static_cast<int>(CommGroup::kDp)] = 0.5;
  t.stages[2].t = 7;  // as late, but not first
  t.colls = {coll(0, CommGroup::kTp, 100, 0, 1, 10), coll(1, CommGroup::kTp, 100, 1, 2, 30),
             coll(2, CommGroup::kDp, 1000, 2, 2.000004, 50),
             coll(3, CommGroup::kPp, 10, 3, 3.000002, 5)};
  DistinctCollective tp{0, 2, {}};
  tp.cost.drops = 3;
  tp.cost.paused_ps = 2'000'000;
  tp.cost.events = 100;
  tp.cost.digest = 11;
  DistinctCollective dp{2, 1, {}};
  dp.cost.drops = 4;
  dp.cost.events = 50;
  dp.cost.digest = 22;
  t.distinct = {tp, dp};
  return t;
}

TEST(StepSummary, TheCriticalStageAndItsSplit) {
  Scenario s;
  s.par.dp = 4;
  const auto topo = testing::leaf_spine(2, 1, 2);
  const StepResult r = summarize_step(s, topo, trace());
  EXPECT_EQ(r.critical_stage, 1u);
  EXPECT_EQ(r.step_s, 7.0);
  EXPECT_EQ(r.compute_s, 4.0);
  EXPECT_EQ(r.bubble_s, 1.0);
  EXPECT_EQ(r.optimizer_s, 0.5);
  EXPECT_EQ(r.exposed_s[static_cast<int>(CommGroup::kTp)], 1.0);
  EXPECT_EQ(r.exposed_s[static_cast<int>(CommGroup::kDp)], 0.5);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.interrupted);
  EXPECT_NEAR(r.mfu, r.model_flops / 7.0 / s.par.world() / r.peak_flops, 1e-15);
}

TEST(StepSummary, CollectivesByGroupAndFabricCountersOncePerDistinct) {
  const Scenario s;
  const auto topo = testing::leaf_spine(2, 1, 2);
  const StepResult r = summarize_step(s, topo, trace());
  const int tp = static_cast<int>(CommGroup::kTp);
  const int dp = static_cast<int>(CommGroup::kDp);
  EXPECT_EQ(r.collectives[tp], 2u);
  EXPECT_EQ(r.busbw_gbs[tp], 20.0);  // the mean
  EXPECT_EQ(r.comm_bytes[tp], 200.0);
  EXPECT_EQ(r.collectives[dp], 1u);
  EXPECT_EQ(r.busbw_gbs[dp], 50.0);
  EXPECT_EQ(r.collectives[static_cast<int>(CommGroup::kEp)], 0u);
  EXPECT_EQ(r.distinct_collectives, 2u);
  EXPECT_EQ(r.drops, 7u);  // not times the repetitions: what the simulated runs saw
  EXPECT_EQ(r.events, 150u);
  EXPECT_DOUBLE_EQ(r.paused_s, 2e-6);
  // Collective times: the DP (4 us) and PP (2 us) collectives, not TP.
  EXPECT_NEAR(r.cct_max_us, 4.0, 1e-6);
  EXPECT_NEAR(r.cct_p50_us, 2.0, 1e-6);
  EXPECT_EQ(r.colls.size(), 4u);
}

TEST(StepSummary, FlowsAndLinksCountEveryRepetition) {
  const Scenario s;
  const auto topo = testing::leaf_spine(2, 1, 2);
  StepTrace t = trace();
  auto rdma = std::make_shared<nic::RdmaResults>();
  rdma->endpoints.resize(2);
  rdma->endpoints[0].bytes = 100;
  rdma->endpoints[0].packets = 3;
  rdma->endpoints[1].bytes = 50;
  rdma->endpoints[1].ecn_received = 2;
  t.distinct[0].cost.rdma = rdma;
  t.distinct[0].cost.connections =
      std::make_shared<const std::vector<nic::Connection>>(std::vector<nic::Connection>{{0, 1}});
  fabric::PortStats ps;
  ps.bytes = 1000;
  ps.packets = 10;
  ps.busy_ps = 1'000'000;
  t.distinct[0].cost.ports =
      std::make_shared<const std::vector<std::pair<std::uint32_t, fabric::PortStats>>>(
          std::vector<std::pair<std::uint32_t, fabric::PortStats>>{{2, ps}});
  const StepResult r = summarize_step(s, topo, std::move(t));
  ASSERT_EQ(r.flows.size(), 1u);
  EXPECT_EQ(r.flows[0].collective, 0u);
  EXPECT_EQ(r.flows[0].repeats, 2u);
  EXPECT_EQ(r.flows[0].bytes, 150u);  // both directions
  EXPECT_EQ(r.flows[0].packets, 3u);
  EXPECT_EQ(r.flows[0].ecn_marked, 2u);
  ASSERT_EQ(r.links.size(), 1u);
  EXPECT_EQ(r.links[0].port, 2u);
  EXPECT_EQ(r.links[0].node, topo.ports[2].node);
  EXPECT_EQ(r.links[0].bytes, 2000.0);  // two repetitions
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 2e-6);
}

TEST(StepSummary, StopReasonAndDigest) {
  const Scenario s;
  const auto topo = testing::leaf_spine(2, 1, 2);
  StepTrace t = trace();
  t.stop = StepStop::kEnd;
  const StepResult end = summarize_step(s, topo, t);
  EXPECT_FALSE(end.complete);
  EXPECT_FALSE(end.interrupted);
  t.stop = StepStop::kInterrupted;
  const StepResult stopped = summarize_step(s, topo, t);
  EXPECT_FALSE(stopped.complete);
  EXPECT_TRUE(stopped.interrupted);
  // The digest covers each distinct collective's digest, in the order they first ran.
  EXPECT_EQ(end.digest, stopped.digest);
  t.distinct[1].cost.digest = 23;
  EXPECT_NE(summarize_step(s, topo, t).digest, end.digest);
  t.distinct[0].cost.digest = 22;  // the same digests in the other order
  t.distinct[1].cost.digest = 11;
  EXPECT_NE(summarize_step(s, topo, t).digest, end.digest);
}

}  // namespace
}  // namespace stepsim::workload
