#include "stepsim/fabric/telemetry.hpp"

#include <gtest/gtest.h>

namespace stepsim::fabric {
namespace {

TEST(TxUtilization, BackToBackFramesGiveOneAndIdleDecays) {
  TxUtilization u;
  const SimTime w = SimTime::us(8);
  const SimTime ser = SimTime::ns(100);
  // The first frame after a long idle: the busy share of one frame.
  u.on_transmit(SimTime::us(100), ser, w);
  EXPECT_DOUBLE_EQ(u.util, 100.0 / 8000.0);
  // Back to back for a whole window: close to 1.
  SimTime t = SimTime::us(100);
  for (int i = 0; i < 400; ++i) u.on_transmit(t += ser, ser, w);
  EXPECT_NEAR(u.util, 1.0, 0.02);
}

TEST(StampUtilization, KeepsThePathMaximumOfQueueOverBdpPlusTx) {
  Packet p;
  // 400 Gb/s x 8 us = 400,000 B: a 200 KB queue is U = 0.5, plus 0.25 transmit utilization.
  stamp_utilization(p, 200'000, DataRate::gbps(400), 0.25, SimTime::us(8));
  EXPECT_EQ(p.telemetry, static_cast<std::uint16_t>(0.75 * kTelemetryOne));
  stamp_utilization(p, 0, DataRate::gbps(400), 0.1, SimTime::us(8));  // a less loaded hop
  EXPECT_EQ(p.telemetry, static_cast<std::uint16_t>(0.75 * kTelemetryOne));
}

}  // namespace
}  // namespace stepsim::fabric
