#include "stepsim/cc/dcqcn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "stepsim/config/param_table.hpp"

namespace stepsim::cc {
namespace {

constexpr double kLine = 400e9;

DcqcnParams paper() {
  DcqcnParams p;
  EXPECT_TRUE(dcqcn_preset("sigcomm15", p));
  return p;
}

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
  const DcqcnParams p = paper();
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
    EXPECT_DOUBLE_EQ(d.alpha_at(t), alpha) << round;
    EXPECT_DOUBLE_EQ(d.target_bps(), rt) << round;
    EXPECT_DOUBLE_EQ(d.current_bps(), rc) << round;
  }
  // Twelve halvings later RC is within 0.1% of the line rate.
  EXPECT_GT(d.current_bps(), 0.999 * kLine);
}

TEST(Dcqcn, ByteCounterAndTimerTogetherReachHyperIncrease) {
  DcqcnParams p = paper();
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
  for (const std::string& set : dcqcn_preset_names()) {
    DcqcnParams p;
    ASSERT_TRUE(dcqcn_preset(set, p));
    Dcqcn d(p, DataRate::gbps(400));
    d.on_cnp(SimTime::zero());
    SimTime t = SimTime::zero();
    int rounds = 0;
    while (!d.next_timer().is_never() && rounds < 100'000) {
      t = d.next_timer();
      d.on_timer(t);
      ++rounds;
    }
    EXPECT_LT(rounds, 100'000) << set;
    EXPECT_EQ(d.rate(), DataRate::gbps(400)) << set;
    // Alpha keeps decaying while idle: a CNP n periods after the first cuts by (1-g)^n of it.
    const double alpha = d.alpha();
    EXPECT_DOUBLE_EQ(alpha, (1 - p.g) * p.initial_alpha + p.g) << set;
    const std::int64_t n = t.picoseconds() / p.alpha_timer.picoseconds() + 10;
    const SimTime later = p.alpha_timer * n + SimTime::ns(1);
    const double decayed = alpha * std::pow(1 - p.g, static_cast<double>(n));
    EXPECT_DOUBLE_EQ(d.alpha_at(later), decayed) << set;
    d.on_cnp(later);
    EXPECT_DOUBLE_EQ(d.alpha(), (1 - p.g) * decayed + p.g) << set;
    EXPECT_DOUBLE_EQ(d.current_bps(), 400e9 * (1 - decayed / 2)) << set;
  }
}

// The NIC firmware's set (NVIDIA DCQCN parameters, docs/nic.md): alpha 1023/1024 at the first
// CNP, gain 1 - 1019/1024 per 1 us, a cut at most every 4 us (a CNP inside defers it to the
// period's end), the target clamped only when the timer raised the rate since the last cut.
TEST(Dcqcn, FirmwareSetCoalescesCutsAndClampsTheTargetOnlyAfterATimerIncrease) {
  const DcqcnParams p;  // the defaults are the firmware's
  EXPECT_EQ(p.preset, "mlx5");
  EXPECT_DOUBLE_EQ(p.g, 5.0 / 1024);
  EXPECT_EQ(p.rate_reduce_period, SimTime::us(4));
  EXPECT_EQ(p.increase_timer, SimTime::us(300));
  EXPECT_EQ(p.fast_recovery_rounds, 1);
  Dcqcn d(p, DataRate::bps(static_cast<std::int64_t>(kLine)));
  d.on_cnp(SimTime::zero());
  double rc = kLine * (1 - p.initial_alpha / 2);
  EXPECT_DOUBLE_EQ(d.current_bps(), rc);
  double alpha = (1 - p.g) * p.initial_alpha + p.g;
  // A CNP 1 us later: no cut now; alpha counts it; the cut comes at 4 us.
  d.on_cnp(SimTime::us(1));
  alpha *= 1 - p.g;                 // one K (1 us) without a CNP: one decay
  alpha = (1 - p.g) * alpha + p.g;  // then the CNP's increase
  EXPECT_DOUBLE_EQ(d.current_bps(), rc);
  EXPECT_EQ(d.next_timer(), SimTime::us(4));
  d.on_timer(SimTime::us(4));
  const double alpha_at_cut = alpha * std::pow(1 - p.g, 3.0);
  rc *= 1 - alpha_at_cut / 2;
  EXPECT_DOUBLE_EQ(d.current_bps(), rc);
  EXPECT_DOUBLE_EQ(d.target_bps(), kLine);  // no timer increase yet: the target stays at line
  // The byte counter recovers halfway to the (unclamped) target each 32767 bytes.
  d.on_sent(SimTime::us(5), p.byte_counter);
  rc = (kLine + rc) / 2;  // F = 1: the first event is already additive: RT + R_AI, capped
  EXPECT_DOUBLE_EQ(d.current_bps(), rc);
  // A timer increase, then a cut: now the target is clamped to the rate before the cut.
  d.on_timer(SimTime::us(304));
  rc = (kLine + rc) / 2;
  EXPECT_DOUBLE_EQ(d.current_bps(), rc);
  d.on_cnp(SimTime::us(400));
  EXPECT_DOUBLE_EQ(d.target_bps(), rc);
  EXPECT_LT(d.current_bps(), rc);
}

// The preset key rewrites every cc.dcqcn key; keys after it override.
TEST(Dcqcn, PresetKeySelectsTheNamedSetAndLaterKeysOverride) {
  CcParams p;
  config::ParamTable t;
  declare_cc_params(t, p);
  EXPECT_EQ(t.find("cc.dcqcn.preset")->get(), "mlx5");
  ASSERT_TRUE(t.apply("cc.dcqcn.g=0.5").ok());
  ASSERT_TRUE(t.apply("cc.dcqcn.preset=sigcomm15").ok());
  EXPECT_EQ(p.dcqcn.g, 1.0 / 256);
  EXPECT_EQ(p.dcqcn.increase_timer, SimTime::us(55));
  EXPECT_EQ(p.dcqcn.cnp_interval, SimTime::us(50));
  ASSERT_TRUE(t.apply("cc.dcqcn.rate_ai=400Mbps").ok());
  EXPECT_EQ(p.dcqcn.rate_ai, DataRate::bps(400'000'000));
  EXPECT_EQ(t.find("cc.dcqcn.preset")->get(), "sigcomm15");
  const auto bad = t.apply("cc.dcqcn.preset=cx9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("mlx5, sigcomm15"), std::string::npos);
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
