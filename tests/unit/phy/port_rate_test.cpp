#include "stepsim/phy/port_rate.hpp"

#include <gtest/gtest.h>

namespace stepsim::phy {
namespace {

std::int64_t data_gbps_x1000(const char* name) {
  return standard_port(name).value().data_rate().bits_per_second() / 1000'000;
}

TEST(PortRate, SignallingRatesMatchTheIbCoreDefinitions) {
  // validation/fabric.md L1: NDR 4x 425,000 Mb/s, XDR 4x 850,000 Mb/s.
  EXPECT_EQ(standard_port("NDR").value().signalling_rate().bits_per_second(), 425'000'000'000);
  EXPECT_EQ(standard_port("XDR").value().signalling_rate().bits_per_second(), 850'000'000'000);
}

TEST(PortRate, DataRatesFollowFromLanesBaudFecAndCoding) {
  // By hand: 1.6T = 8 lanes x 106.25 GBd x 2 bit (PAM4) = 1,700 Gb/s; x 514/544 (KP4 parity)
  // = 1,606.25 Gb/s; x 256/257 (transcoding) = 1,600 Gb/s.
  EXPECT_EQ(data_gbps_x1000("1.6T"), 1'600'000);
  EXPECT_EQ(data_gbps_x1000("800G"), 800'000);  // 8 x 53.125 GBd x 2
  EXPECT_EQ(data_gbps_x1000("400G"), 400'000);  // 4 x 53.125 GBd x 2
  EXPECT_EQ(data_gbps_x1000("XDR"), 800'000);
  EXPECT_EQ(data_gbps_x1000("200G"), 200'000);
  EXPECT_EQ(data_gbps_x1000("100G"), 100'000);  // 4 x 25.78125 GBd NRZ, RS(528,514)
}

TEST(PortRate, FecAndCodingCostWhatTheyShould) {
  PortSpec p = standard_port("1.6T").value();
  p.fec = FecKind::kNone;
  p.coding = LineCoding::kNone;
  EXPECT_EQ(p.data_rate().bits_per_second(), 1'700'000'000'000);
  p.fec = FecKind::kRs544;
  EXPECT_EQ(p.data_rate().bits_per_second(), 1'606'250'000'000);
}

TEST(PortRate, LosingLanesScalesTheRate) {
  const PortSpec p = standard_port("1.6T").value();
  EXPECT_EQ(p.with_lanes(7).data_rate().bits_per_second(), 1'400'000'000'000);
  EXPECT_EQ(p.with_lanes(0).lanes, 1);
}

TEST(PortRate, UnknownNamesListTheKnownOnes) {
  const auto r = standard_port("3.2T");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("allowed: 100G, 200G, 400G, 800G, 1.6T, NDR, XDR"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim::phy
