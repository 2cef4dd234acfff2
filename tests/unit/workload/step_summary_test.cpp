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
  const auto topo = testing::leaf_spine(2, 1, 2);  // one GPU and one NIC per server
  StepTrace t = trace();
  // The DP collective (record 2, from 2 s) sent over connection port 1 -> port 2 both ways.
  std::vector<collective::ConnectionFlow> flows(4);  // connection 0 idle, connection 1 used
  flows[2] = {100, 2, 30, 4, 0, 1000, 2000, 5000};
  flows[3] = {50, 1, 13, 0, 2, 1500, 2500, 4000};
  t.distinct[1].cost.flows =
      std::make_shared<const std::vector<collective::ConnectionFlow>>(std::move(flows));
  t.distinct[1].cost.connections = std::make_shared<const std::vector<nic::Connection>>(
      std::vector<nic::Connection>{{0, 3}, {1, 2}});
  fabric::PortStats ps;
  ps.bytes = 1000;
  ps.packets = 10;
  ps.busy_ps = 1'000'000;
  t.distinct[0].cost.ports =
      std::make_shared<const std::vector<std::pair<std::uint32_t, fabric::PortStats>>>(
          std::vector<std::pair<std::uint32_t, fabric::PortStats>>{{2, ps}});
  const StepResult r = summarize_step(s, topo, std::move(t));
  ASSERT_EQ(r.flows.size(), 2u);  // one row per direction that sent anything
  EXPECT_EQ(r.flow_rows_total, 2u);
  EXPECT_EQ(r.flows_sample, 1u);
  const FlowRow& ab = r.flows[0];
  EXPECT_EQ(ab.collective, 2u);
  EXPECT_EQ(ab.repeats, 1u);
  EXPECT_EQ(ab.group, CommGroup::kDp);
  EXPECT_EQ(ab.src_nic, 1u);
  EXPECT_EQ(ab.dst_nic, 2u);
  EXPECT_EQ(ab.src_gpu, topo.ports[1].node);  // server i holds GPU i
  EXPECT_EQ(ab.dst_gpu, topo.ports[2].node);
  EXPECT_EQ(ab.bytes, 100u);
  EXPECT_EQ(ab.packets, 30u);
  EXPECT_EQ(ab.retransmitted, 4u);
  EXPECT_EQ(ab.ecn_marked, 0u);
  EXPECT_EQ(ab.start_ps, 2'000'000'000'000 + 1000);  // the record's start plus the run's offset
  EXPECT_EQ(ab.first_byte_ps, 2'000'000'000'000 + 2000);
  EXPECT_EQ(ab.end_ps, 2'000'000'000'000 + 5000);
  const FlowRow& ba = r.flows[1];
  EXPECT_EQ(ba.src_nic, 2u);
  EXPECT_EQ(ba.dst_nic, 1u);
  EXPECT_EQ(ba.bytes, 50u);
  EXPECT_EQ(ba.ecn_marked, 2u);
  ASSERT_EQ(r.links.size(), 1u);
  EXPECT_EQ(r.links[0].port, 2u);
  EXPECT_EQ(r.links[0].node, topo.ports[2].node);
  EXPECT_EQ(r.links[0].bytes, 2000.0);  // two repetitions
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 2e-6);
}

TEST(StepSummary, OutputFlowsKeepsAllOneInKCollectivesOrNone) {
  const auto rows = [] {
    StepResult r;
    for (std::uint32_t c = 0; c < 1000; ++c) {
      FlowRow f;
      f.collective = c;
      for (int k = 0; k < 3; ++k) r.flows.push_back(f);
    }
    return r;
  };
  OutputParams out;
  StepResult all = rows();
  select_flows(out, all);  // auto: few rows, all of them
  EXPECT_EQ(all.flows.size(), 3000u);
  EXPECT_EQ(all.flows_sample, 1u);
  out.flows = "sampled";
  StepResult sampled = rows();
  select_flows(out, sampled);
  EXPECT_EQ(sampled.flows_sample, 16u);
  EXPECT_EQ(sampled.flow_rows_total, 3000u);
  // Every flow of the chosen collectives, about 1 in 16 of them, by the collective id alone.
  EXPECT_EQ(sampled.flows.size() % 3, 0u);
  EXPECT_GT(sampled.flows.size(), 3u * 1000 / 16 / 2);
  EXPECT_LT(sampled.flows.size(), 3u * 1000 / 16 * 2);
  for (const FlowRow& f : sampled.flows) EXPECT_TRUE(flow_row_sampled(f.collective, 16));
  out.flows = "none";
  StepResult none = rows();
  select_flows(out, none);
  EXPECT_TRUE(none.flows.empty());
  EXPECT_EQ(none.flows_sample, 0u);
  EXPECT_EQ(none.flow_rows_total, 3000u);
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
