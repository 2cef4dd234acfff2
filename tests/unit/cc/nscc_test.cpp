#include "src/cc/nscc.hpp"

#include <gtest/gtest.h>

namespace stepsim::cc {
namespace {

// 400 Gb/s x 4 us: one BDP is 200 kB; the default target is half the base RTT (2 us).
const CcPath kNsccPath{DataRate::gbps(400), SimTime::us(4)};

AckInfo sample(SimTime rtt, bool ecn, std::int64_t bytes = 4158) {
  AckInfo a;
  a.rtt = rtt;
  a.ecn = ecn;
  a.bytes = bytes;
  return a;
}

TEST(Nscc, StartsAtOneBdpAndLineRate) {
  const Nscc cc(NsccParams{}, kNsccPath);
  EXPECT_EQ(cc.window(), 200'000);
  EXPECT_EQ(cc.rate(), DataRate::gbps(400));
  EXPECT_EQ(cc.target(), SimTime::us(2));
}

// ECN with delay above the target: W x (1 - min(gamma (d - t) / d, max_md)), once per base RTT.
TEST(Nscc, EcnAndDelayAboveTargetDecreaseOncePerBaseRtt) {
  Nscc cc(NsccParams{}, kNsccPath);
  // RTT 8 us: delay 4 us, target 2 us: 0.8 x 2 / 4 = 0.4.
  cc.on_ack(SimTime::us(10), sample(SimTime::us(8), true));
  EXPECT_NEAR(cc.window_bytes(), 200'000 * 0.6, 1e-6);
  cc.on_ack(SimTime::us(11), sample(SimTime::us(8), true));  // within a base RTT: no second cut
  EXPECT_NEAR(cc.window_bytes(), 120'000, 1e-6);
  // A huge delay is capped at max_md (0.5).
  cc.on_ack(SimTime::us(20), sample(SimTime::us(100), true));
  EXPECT_NEAR(cc.window_bytes(), 60'000, 1e-6);
  EXPECT_EQ(cc.decreases(), 2u);
}

TEST(Nscc, EcnWithSmallDelayHoldsAndDelayWithoutEcnOnlyFairIncrease) {
  Nscc cc(NsccParams{}, kNsccPath);
  cc.on_ack(SimTime::us(10), sample(SimTime::us(8), true));  // 120 kB
  const double w = cc.window_bytes();
  cc.on_ack(SimTime::us(30), sample(SimTime::us(5), true));  // delay 1 us < target: hold
  EXPECT_EQ(cc.window_bytes(), w);
  cc.on_ack(SimTime::us(31), sample(SimTime::us(8), false));  // no ECN: fair increase only
  EXPECT_NEAR(cc.window_bytes(), w + 4096.0 * 4158 / w, 1e-6);
}

TEST(Nscc, ProportionalIncreaseBelowTargetUpToTheCeiling) {
  Nscc cc(NsccParams{}, kNsccPath);
  cc.on_ack(SimTime::us(10), sample(SimTime::us(100), true));  // halved: 100 kB
  const double w = cc.window_bytes();
  // Delay 1 us of a 2 us target: alpha x acked x 1/2 plus the fair increase.
  cc.on_ack(SimTime::us(30), sample(SimTime::us(5), false, 10'000));
  EXPECT_NEAR(cc.window_bytes(), w + 0.5 * 10'000 * 0.5 + 4096.0 * 10'000 / w, 1e-6);
  for (int i = 0; i < 1000; ++i) cc.on_ack(SimTime::us(40), sample(SimTime::us(4), false, 10'000));
  EXPECT_NEAR(cc.window_bytes(), 300'000, 1e-6);  // 1.5 BDP
}

TEST(Nscc, ShorterSampleLowersTheBaseRttAndTrimNackCuts) {
  Nscc cc(NsccParams{}, kNsccPath);
  cc.on_ack(SimTime::us(10), sample(SimTime::us(3), false));  // delay 0: the largest increase
  EXPECT_EQ(cc.base_rtt(), SimTime::us(3));
  const double w = 200'000 + 0.5 * 4158 + 4096.0 * 4158 / 200'000;
  EXPECT_NEAR(cc.window_bytes(), w, 1e-6);
  cc.on_nack(SimTime::us(11));  // a trimmed packet: max_md
  EXPECT_NEAR(cc.window_bytes(), w * 0.5, 1e-6);
  cc.on_ack(SimTime::us(20), AckInfo{});  // no echo: no change
  EXPECT_NEAR(cc.window_bytes(), w * 0.5, 1e-6);
}

TEST(Nscc, RegisteredWithEchoNeeds) {
  CcParams p;
  p.algorithm = "nscc";
  const CcNeeds n = congestion_control_needs(p).value();
  EXPECT_TRUE(n.ack_echo);
  EXPECT_TRUE(n.ack_per_packet);
  EXPECT_FALSE(n.cnp);
  EXPECT_EQ(make_congestion_control(p, kNsccPath).value()->window(), 200'000);
}

}  // namespace
}  // namespace stepsim::cc
