// perftest's bidirectional (-b) and duration (-D) modes on two hosts under one 1.6T leaf: both
// ways move twice the bytes of one way on a full-duplex link, and a duration test counts what
// completed within the duration, over the duration.
#include <gtest/gtest.h>

#include "stepsim/nic/perftest.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

PerftestResult run(const topology::Topology& topo, const PerftestSpec& spec) {
  NicParams nic;
  nic.cc.algorithm = "none";
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(50);
  Perftest app(spec, topo);
  const fabric::FabricParams fp;  // named: a temporary trips GCC 12's maybe-uninitialized
  auto r = run_rdma(topo, app.connections(), nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  EXPECT_TRUE(r->stats.completed);
  return app.result(sync);
}

PerftestSpec write_bw(const topology::Topology& topo, std::int64_t bytes, int iterations) {
  PerftestSpec spec;
  spec.kind = PerftestKind::kWriteBw;
  spec.bytes = bytes;
  spec.iterations = iterations;
  spec.a = topo.port_id(0, 0);
  spec.b = topo.port_id(1, 0);
  return spec;
}

TEST(PerftestModes, BidirectionalMovesTwiceTheBytesInNearlyTheSameTime) {
  const auto topo = testing::leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = write_bw(topo, 1 << 20, 50);
  const PerftestResult one = run(topo, spec);
  spec.bidirectional = true;
  const PerftestResult both = run(topo, spec);
  EXPECT_EQ(one.messages, 50);
  EXPECT_EQ(both.messages, 100);
  EXPECT_EQ(both.bytes, 2 * one.bytes);
  EXPECT_EQ(both.completed_ps.size(), 100u);
  EXPECT_GT(both.gbps(), 1.9 * one.gbps());
  EXPECT_LT(both.gbps(), 2.02 * one.gbps());
}

TEST(PerftestModes, ADurationCountsWhatCompletedWithinIt) {
  const auto topo = testing::leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = write_bw(topo, 65536, 100);
  spec.qps = 4;
  const PerftestResult counted = run(topo, spec);
  spec.duration = SimTime::us(100);
  const PerftestResult timed = run(topo, spec);
  // The bandwidth is over the duration exactly, and matches the counted run's within 2%.
  EXPECT_EQ(timed.last_done_ps - timed.first_post_ps, SimTime::us(100).picoseconds());
  EXPECT_EQ(timed.completed_ps.size(), static_cast<std::size_t>(timed.messages));
  ASSERT_FALSE(timed.completed_ps.empty());
  EXPECT_LE(timed.completed_ps.back(), timed.last_done_ps);
  EXPECT_NEAR(timed.gbps(), counted.gbps(), 0.02 * counted.gbps());
  // 100 us at ~1.5 Tb/s: ~290 messages of 64 KiB.
  EXPECT_GT(timed.messages, 250);
  EXPECT_LT(timed.messages, 320);
}

TEST(PerftestModes, ALatencyTestForADurationPingPongsUntilItEnds) {
  const auto topo = testing::leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = write_bw(topo, 64, 1000);
  spec.kind = PerftestKind::kWriteLat;
  spec.duration = SimTime::us(20);
  const PerftestResult r = run(topo, spec);
  // Rounds of one round trip each, started until 20 us had passed: the last one ends after it.
  ASSERT_GT(r.messages, 2);
  EXPECT_LT(r.messages, 1000);
  EXPECT_GE(r.last_done_ps - r.first_post_ps, SimTime::us(20).picoseconds());
  EXPECT_LT(r.last_done_ps - r.first_post_ps - SimTime::us(20).picoseconds(),
            2 * r.samples_ps.back() + 1);
}

}  // namespace
}  // namespace stepsim::nic
