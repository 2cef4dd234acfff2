// The whole step's work fraction (src/cli/work_curve.hpp): it follows the network bytes at ideal
// fidelity, not simulated time, so a compute-only stretch before a heavy network collective is a
// small part of the work; a collective inside one server adds none; it is monotone and 1 where
// the last collective ends (T, or later for the parameter all-gathers under the next step).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/cli/work_curve.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::cli {
namespace {

workload::CollectiveRecord record(workload::CommGroup g, collective::Kind k, std::int64_t bytes,
                                  std::uint32_t gpus, double start, double end) {
  workload::CollectiveRecord c;
  c.group = g;
  c.kind = k;
  c.bytes = bytes;
  c.gpus = gpus;
  c.start_s = start;
  c.end_s = end;
  return c;
}

// T = 10 s: a TP all-reduce inside a server at [1, 2], compute only until 9 s, then the DP
// gradient reduce-scatter across 8 servers at [9, 10].
WorkCurve synthetic(bool with_folded) {
  std::vector<workload::CollectiveRecord> colls;
  std::vector<bool> cross;
  if (with_folded) {
    colls.push_back(
        record(workload::CommGroup::kTp, collective::Kind::kAllReduce, 4LL << 30, 8, 1.0, 2.0));
    cross.push_back(false);
  }
  colls.push_back(
      record(workload::CommGroup::kDp, collective::Kind::kReduceScatter, 1LL << 30, 8, 9.0, 10.0));
  cross.push_back(true);
  WorkCurve w;
  EXPECT_TRUE(w.add_job(colls, cross, 16));
  w.finish(10.0);
  return w;
}

TEST(WorkCurve, FollowsTheNetworkBytesNotSimulatedTime) {
  const WorkCurve w = synthetic(true);
  // 7/8 of 1 GiB per GPU, 16 copies.
  EXPECT_DOUBLE_EQ(w.network_bytes(), 7.0 / 8 * (1LL << 30) * 16);
  // 90% of simulated time, before the collective: only the time share.
  EXPECT_NEAR(w.fraction(9.0), WorkCurve::kTimeShare * 0.9, 1e-12);
  EXPECT_LT(w.fraction(9.0), 0.1);
  // Halfway through the collective: half its bytes.
  EXPECT_NEAR(w.fraction(9.5), (1 - WorkCurve::kTimeShare) * 0.5 + WorkCurve::kTimeShare * 0.95,
              1e-12);
  EXPECT_NEAR(w.fraction(10.0), 1.0, 1e-12);
  // A step slower than at ideal fidelity passes 1.
  EXPECT_GT(w.fraction(11.0), 1.0);
}

TEST(WorkCurve, AFoldedCollectiveAddsNoWork) {
  const WorkCurve with = synthetic(true);
  const WorkCurve without = synthetic(false);
  EXPECT_EQ(with.network_bytes(), without.network_bytes());
  for (double t = 0; t <= 10.0; t += 0.25) EXPECT_EQ(with.fraction(t), without.fraction(t)) << t;
  // Nothing across servers at all: the fraction is simulated time.
  WorkCurve none;
  EXPECT_TRUE(none.add_job(
      {record(workload::CommGroup::kTp, collective::Kind::kAllReduce, 1 << 20, 8, 1.0, 2.0)},
      {false}, 16));
  none.finish(4.0);
  EXPECT_EQ(none.network_bytes(), 0);
  EXPECT_DOUBLE_EQ(none.fraction(1.0), 0.25);
}

TEST(WorkCurve, IsMonotoneWithOverlapsAndInstantCollectives) {
  WorkCurve w;
  w.add({0.5, 3.0, 100});
  w.add({1.0, 1.0, 50});  // zero length: a jump
  w.add({2.0, 2.5, 400});
  w.add({2.2, 6.0, 250});
  w.add({6.0, 6.0, 10});
  w.add({5.5, 7.0, 90});  // ends after T (a parameter all-gather under the next step's forward)
  w.finish(6.0);
  EXPECT_DOUBLE_EQ(w.network_bytes(), 900);  // every byte, the all-gather's after T included
  EXPECT_DOUBLE_EQ(w.end_s(), 7.0);
  double last = -1;
  for (int i = 0; i <= 700; ++i) {
    const double f = w.fraction(i * 0.01);
    EXPECT_GE(f, last) << i;
    last = f;
  }
  // At T, 60 of the all-gather's 90 bytes are still to come: the work is not done.
  EXPECT_NEAR(w.fraction(6.0),
              (1 - WorkCurve::kTimeShare) * 840 / 900 + WorkCurve::kTimeShare * 6 / 7, 1e-12);
  EXPECT_NEAR(w.fraction(7.0), 1.0, 1e-12);
  EXPECT_GT(w.fraction(7.5), 1.0);
  // Delivered bytes count against every byte: all of them delivered at T is done.
  EXPECT_NEAR(w.fraction(6.0, 900), 1 - WorkCurve::kTimeShare / 7, 1e-12);
  EXPECT_LT(w.fraction(0.99), w.fraction(1.0));  // the jump at 1 s is counted at 1 s
  EXPECT_EQ(w.add_job({}, {true}, 1), false);    // the flags must line up with the records
}

TEST(CrossServerRecorder, MarksCollectivesThatSpanServers) {
  auto s = workload::load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", {});
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auto topo = topology::load_topology(s->topology).value();
  auto ideal = workload::make_ideal_comm(topo, *s);
  CrossServerRecorder rec(topo, *ideal);
  // tiny.yaml: 8 GPUs a server.
  ASSERT_TRUE(rec.cost({collective::Kind::kAllReduce, 1 << 20, {0, 1, 2, 3}, {}}).ok());
  ASSERT_TRUE(rec.cost({collective::Kind::kSendRecv, 1 << 20, {0, 8}, {}}).ok());
  EXPECT_EQ(rec.cross, (std::vector<bool>{false, true}));
  // A step: one flag per recorded collective.
  CrossServerRecorder step_rec(topo, *ideal);
  auto r = workload::run_step(*s, topo, step_rec);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(step_rec.cross.size(), r->colls.size());
  WorkCurve w;
  EXPECT_TRUE(w.add_job(r->colls, step_rec.cross, 1));
}

// The delivered bytes: where the run is behind the ideal curve in simulated time but has moved
// the bytes (it reached the data-parallel reduction a little later, and simulated time barely
// moves through it), the fraction follows the bytes; where the bytes lag, the curve holds the
// fraction up; never less than either, monotone in both arguments.
TEST(WorkCurve, DeliveredBytesLiftTheFraction) {
  const WorkCurve w = synthetic(true);
  const double total = w.network_bytes();
  // 8.9 s: before the ideal reduction, but 60% of its bytes delivered.
  const double ahead = w.fraction(8.9, 0.6 * total);
  EXPECT_NEAR(ahead, (1 - WorkCurve::kTimeShare) * 0.6 + WorkCurve::kTimeShare * 0.89, 1e-12);
  EXPECT_GT(ahead, w.fraction(8.9) + 0.5);
  // Bytes behind the curve (or none reported): the curve.
  EXPECT_EQ(w.fraction(9.5, 0.1 * total), w.fraction(9.5));
  EXPECT_EQ(w.fraction(9.5, 0), w.fraction(9.5));
  // Monotone in each argument over a grid.
  for (double t = 8.0; t <= 10.5; t += 0.1) {
    double prev = -1;
    for (double d = 0; d <= 1.2 * total; d += 0.05 * total) {
      const double f = w.fraction(t, d);
      EXPECT_GE(f, prev) << t << " " << d;
      EXPECT_GE(f, w.fraction(t));
      EXPECT_LE(f, w.fraction(t + 0.1, d) + 1e-15) << t << " " << d;
      prev = f;
    }
  }
  // No curve bytes at all: simulated time, whatever is delivered.
  WorkCurve none;
  none.finish(4.0);
  EXPECT_DOUBLE_EQ(none.fraction(1.0, 1e9), 0.25);
}

}  // namespace
}  // namespace stepsim::cli
