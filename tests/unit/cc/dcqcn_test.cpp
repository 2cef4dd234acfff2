#include "stepsim/cc/dcqcn.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace stepsim::cc {
namespace {

constexpr double kLine = 400e9;

TEST(Dcqcn, RegistryHasDcqcnHpccAndNone) {
  // The three shipped algorithms (an added one joins them without editing this test).
  const auto names = congestion_control_names();
  for (const char* n : {"dcqcn", "hpcc", "none"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  CcParams p;
  p.algorithm = "timely";
  const auto bad = make_congestion_control(p, CcPath{DataRate::gbps(400), SimTime::us(2)});
  ASSERT_FALSE(bad.ok());
  for (const std::string& n : names) {
    EXPECT_NE(bad.error().message.find(n), std::string::npos) << n;
  }
  p.algorithm = "none";
  auto none = make_congestion_control(p, CcPath{DataRate::gbps(400), SimTime::us(2)}).value();
  none->on_cnp(SimTime::us(1));
  EXPECT_EQ(none->rate(), DataRate::gbps(400));
  EXPECT_TRUE(none->next_timer().is_never());
}

TEST(Dcqcn, DeclaresCnpsAtItsIntervalAndNoIntOrPerPacketAck) {
  CcParams p;
  p.algorithm = "dcqcn";
  p.dcqcn.cnp_interval = SimTime::us(7);
  const CcNeeds n = congestion_control_needs(p).value();
  EXPECT_TRUE(n.cnp);
  EXPECT_EQ(n.cnp_interval, SimTime::us(7));
  EXPECT_FALSE(n.int_telemetry);
  EXPECT_FALSE(n.ack_per_packet);
}

// The reaction point's trajectory, recomputed here from the algorithm's statement
// (validation/fabric.md C3): the implementation must match it step by step.
TEST(Dcqcn, FollowsTheStatedTrajectoryThroughCutRecoveryAndIncrease) {
  const DcqcnParams p;
  Dcqcn d(p, DataRate::bps(static_cast<std::int64_t>(kLine)));
  EXPECT_EQ(d.current_bps(), kLine);
  EXPECT_TRUE(d.next_timer().is_never());  // nothing to do before the first CNP

  const SimTime t0 = SimTime::us(100);
  d.on_cnp(t0);
  double rc = kLine * (1 - 1.0 / 2);  // alpha starts at 1
  double rt = kLine;
  double alpha = (1 - p.g) * 1.0 + p.g;
  EXPECT_EQ(d.current_bps(), rc);
  EXPECT_EQ(d.target_bps(), rt);
  EXPECT_EQ(d.alpha(), alpha);
  EXPECT_EQ(d.next_timer(), t0 + SimTime::us(55));

  // Timer rounds with max(T, BC) < F (rounds 1..4): fast recovery, RC halfway to RT. From
  // round 5 (T = F, BC = 0 < F): additive increase of RT by R_AI. Alpha decays each round
  // without a CNP. No bytes are sent: the byte counter stays 0.
  SimTime t = t0;
  for (int round = 1; round <= 12; ++round) {
    t += SimTime::us(55);
    ASSERT_EQ(d.next_timer(), t);
    d.on_timer(t);
    alpha = (1 - p.g) * alpha;
    if (round >= p.fast_recovery_rounds) rt += static_cast<double>(p.rate_ai.bits_per_second());
    rt = std::min(rt, kLine);
    rc = std::min((rt + rc) / 2, kLine);
    EXPECT_EQ(d.timer_events(), round);
    EXPECT_DOUBLE_EQ(d.alpha(), alpha) << round;
    EXPECT_DOUBLE_EQ(d.target_bps(), rt) << round;
    EXPECT_DOUBLE_EQ(d.current_bps(), rc) << round;
  }
  // Twelve halvings later RC is within 0.1% of the line rate.
  EXPECT_GT(d.current_bps(), 0.999 * kLine);
}

TEST(Dcqcn, ByteCounterAndTimerTogetherReachHyperIncrease) {
  DcqcnParams p;
  p.byte_counter = 1'000'000;
  Dcqcn d(p, DataRate::bps(static_cast<std::int64_t>(kLine)));
  d.on_cnp(SimTime::zero());
  d.on_cnp(SimTime::us(1));  // two cuts: RT is now well below line rate
  const double rt_after_cuts = d.target_bps();
  SimTime t = SimTime::us(1);
  // Seven timer rounds, each with 1 MB sent (one byte-counter event): both counters pass F = 5.
  for (int round = 1; round <= 7; ++round) {
    t += SimTime::us(55);
    d.on_sent(t - SimTime::ns(1), 1'000'000);
    d.on_timer(t);
  }
  EXPECT_EQ(d.timer_events(), 7);
  EXPECT_EQ(d.byte_events(), 7);
  // Each event once min(T, BC) > F adds (min - F) x R_HAI to RT: hyper increase happened.
  EXPECT_GT(d.target_bps(), rt_after_cuts + static_cast<double>(p.rate_hai.bits_per_second()));
}

TEST(Dcqcn, RecoversToLineRateAndStopsItsTimers) {
  const DcqcnParams p;
  Dcqcn d(p, DataRate::gbps(400));
  d.on_cnp(SimTime::zero());
  SimTime t = SimTime::zero();
  int rounds = 0;
  while (!d.next_timer().is_never() && rounds < 100'000) {
    t = d.next_timer();
    d.on_timer(t);
    ++rounds;
  }
  EXPECT_LT(rounds, 100'000);
  EXPECT_EQ(d.rate(), DataRate::gbps(400));
  // Alpha keeps decaying while idle: a CNP 10 periods later cuts by what the timer would give.
  Dcqcn reference(p, DataRate::gbps(400));
  reference.on_cnp(SimTime::zero());
  double alpha = d.alpha();
  for (int i = 0; i < 10; ++i) alpha *= 1 - p.g;
  const SimTime later = t + p.alpha_timer * 10 + SimTime::ns(1);
  d.on_cnp(later);
  EXPECT_DOUBLE_EQ(d.alpha(), (1 - p.g) * alpha + p.g);
  EXPECT_DOUBLE_EQ(d.current_bps(), 400e9 * (1 - alpha / 2));
}

TEST(CnpGenerator, AtMostOneCnpPerIntervalAndOnlyForMarkedPackets) {
  CnpGenerator g(SimTime::us(50));
  EXPECT_FALSE(g.on_packet(SimTime::us(1), false));
  EXPECT_TRUE(g.on_packet(SimTime::us(2), true));
  EXPECT_FALSE(g.on_packet(SimTime::us(30), true));
  EXPECT_FALSE(g.on_packet(SimTime::us(51), true));  // 49 us after the last CNP
  EXPECT_TRUE(g.on_packet(SimTime::us(52), true));
}

}  // namespace
}  // namespace stepsim::cc
