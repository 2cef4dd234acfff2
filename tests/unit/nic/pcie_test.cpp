#include "stepsim/nic/pcie.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <utility>

namespace stepsim::nic {
namespace {

PcieParams link(int gen, int lanes) {
  PcieParams p;
  p.gen = gen;
  p.lanes = lanes;
  p.auto_size = false;
  return p;
}

std::int64_t bps(DataRate r) {
  return r.bits_per_second();
}

TEST(Pcie, Gen5x16RawBandwidthIs128b130bOf512GTs) {
  // 32 GT/s x 16 lanes = 512 Gb/s signalling; x 128/130 = 504,123,076,923.08 bit/s.
  const PcieParams p = link(5, 16);
  EXPECT_EQ(bps(signalling_rate(p)), 512'000'000'000);
  EXPECT_NEAR(static_cast<double>(bps(raw_bandwidth(p))), 32e9 * 16 * 128.0 / 130.0, 1.0);
  EXPECT_EQ(bps(raw_bandwidth(p)), 504'123'076'923);  // ~63.0 GB/s, DOMAIN.md's "64 GB/s"
}

TEST(Pcie, Gen5EffectiveBandwidthChargesTwentyFourBytesPerMpsTlp) {
  // 256 B payload per TLP + 16 B header + 8 B framing/LCRC: raw x 256/280 = 460.91 Gb/s.
  const PcieParams p = link(5, 16);
  EXPECT_EQ(tlp_overhead(p).count(), 24);
  const double raw = static_cast<double>(bps(raw_bandwidth(p)));
  EXPECT_NEAR(static_cast<double>(bps(effective_bandwidth(p))), raw * 256.0 / 280.0, 1.0);
  EXPECT_EQ(bps(effective_bandwidth(p)), 460'912'527'472);
  // A larger MPS amortises the same overhead: x 512/536.
  PcieParams big = p;
  big.max_payload = Bytes(512);
  EXPECT_NEAR(static_cast<double>(bps(effective_bandwidth(big))), raw * 512.0 / 536.0, 1.0);
}

TEST(Pcie, FlitModeCarries236Of256BytesAndOnlyTheHeaderPerTlp) {
  // Gen6: 64 GT/s x 16 = 1,024 Gb/s; x 236/256 = 944 Gb/s; x 256/(256+16) = 888.47 Gb/s.
  const PcieParams g6 = link(6, 16);
  EXPECT_EQ(bps(raw_bandwidth(g6)), 944'000'000'000);
  EXPECT_EQ(tlp_overhead(g6).count(), 16);
  EXPECT_EQ(bps(effective_bandwidth(g6)), 888'470'588'235);
  // Gen7 x32: 128 GT/s x 32 = 4,096 Gb/s; x 236/256 = 3,776 Gb/s.
  EXPECT_EQ(bps(raw_bandwidth(link(7, 32))), 3'776'000'000'000);
  // Gen3 x16: 8 GT/s x 16 x 128/130.
  EXPECT_EQ(bps(raw_bandwidth(link(3, 16))), 126'030'769'230);
}

TEST(Pcie, DegradeToGen4HalvesTheBandwidthAndKeepsTheLanes) {
  const PcieParams gen5 = link(5, 16);
  const PcieParams gen4 = degrade(gen5, 4);
  EXPECT_EQ(gen4.gen, 4);
  EXPECT_EQ(gen4.lanes, 16);
  EXPECT_EQ(bps(signalling_rate(gen4)) * 2, bps(signalling_rate(gen5)));
  // Exact halving up to the final rounding to a whole bit/s.
  EXPECT_NEAR(static_cast<double>(bps(raw_bandwidth(gen4))) * 2,
              static_cast<double>(bps(raw_bandwidth(gen5))), 1.0);
  EXPECT_NEAR(static_cast<double>(bps(effective_bandwidth(gen4))) * 2,
              static_cast<double>(bps(effective_bandwidth(gen5))), 1.0);
}

TEST(Pcie, DegradeNeverTrainsUpAndFixesTheLink) {
  PcieParams p = link(4, 8);
  p.auto_size = true;
  const PcieParams d = degrade(p, 6);
  EXPECT_EQ(d.gen, 4);
  EXPECT_FALSE(d.auto_size);  // size_for_port must not undo a fault
  EXPECT_EQ(size_for_port(d, DataRate::gbps(800)).gen, 4);
  EXPECT_EQ(degrade(p, 1).gen, 3);  // Gen1/2 are not modelled
}

TEST(Pcie, TransferTimeOf4KiBMatchesTheEffectiveBandwidth) {
  // 4096 B = 16 full 256 B TLPs: 4096 x 8 / 460.91 Gb/s = 71,092.6 ps.
  const PcieParams p = link(5, 16);
  const double expected_ps = 4096.0 * 8 / static_cast<double>(bps(effective_bandwidth(p))) * 1e12;
  EXPECT_NEAR(static_cast<double>(transfer_time(p, Bytes(4096)).picoseconds()), expected_ps, 1.0);
}

TEST(Pcie, TransferTimeChargesAWholeTlpOverheadForAPartialChunk) {
  // A 64 B CQE is one TLP: (64 + 24) B at raw = 1,396.5 ps, rounded up. The pure
  // effective-rate formula would give 1,110.8 ps.
  const PcieParams p = link(5, 16);
  EXPECT_EQ(transfer_time(p, Bytes(64)).picoseconds(), 1397);
  EXPECT_EQ(transfer_time(p, Bytes(257)), raw_bandwidth(p).serialization_time(Bytes(257 + 48)));
  EXPECT_EQ(transfer_time(p, Bytes(0)), SimTime::zero());
}

TEST(Pcie, ReadRequestsAreSplitAtMrrs) {
  const PcieParams p = link(5, 16);
  EXPECT_EQ(read_request_count(p, Bytes(1 << 20)), 256);
  EXPECT_EQ(read_request_count(p, Bytes(4097)), 2);
  EXPECT_EQ(read_request_count(p, Bytes(64)), 1);
  EXPECT_EQ(read_request_count(p, Bytes(0)), 0);
}

TEST(Pcie, SizeForPortPicksTheSmallestLinkThatKeepsUp) {
  struct Case {
    std::int64_t port_gbps;
    int gen;
    int lanes;
  };
  // Effective: Gen5 x16 460.9, Gen6 x16 888.5, Gen6 x32 1,776.9, Gen7 x32 3,553.9 Gb/s.
  const Case cases[] = {{400, 5, 16}, {800, 6, 16}, {1600, 6, 32}, {3200, 7, 32}};
  const std::pair<int, int> ladder[] = {{5, 16}, {6, 16}, {6, 32}, {7, 32}};
  for (const Case& c : cases) {
    const DataRate port = DataRate::gbps(c.port_gbps);
    const PcieParams p = size_for_port(PcieParams{}, port);
    EXPECT_EQ(p.gen, c.gen) << c.port_gbps;
    EXPECT_EQ(p.lanes, c.lanes) << c.port_gbps;
    EXPECT_GE(effective_bandwidth(p), port) << c.port_gbps;
    // The candidate before it is too slow.
    for (std::size_t i = 1; i < std::size(ladder); ++i) {
      if (ladder[i].first == p.gen && ladder[i].second == p.lanes) {
        EXPECT_LT(effective_bandwidth(link(ladder[i - 1].first, ladder[i - 1].second)), port);
      }
    }
  }
}

TEST(Pcie, SizeForPortKeepsAFixedLinkAndTopsOutAtGen7x32) {
  EXPECT_EQ(size_for_port(link(5, 16), DataRate::gbps(1600)).gen, 5);
  const PcieParams top = size_for_port(PcieParams{}, DataRate::gbps(6400));
  EXPECT_EQ(top.gen, 7);
  EXPECT_EQ(top.lanes, 32);
  PcieParams base;
  base.max_payload = Bytes(512);
  EXPECT_EQ(size_for_port(base, DataRate::gbps(400)).max_payload.count(), 512);
}

TEST(Pcie, ValidateNamesTheKeyAndTheAllowedValues) {
  EXPECT_TRUE(PcieParams{}.validate().ok());
  PcieParams p;
  p.gen = 2;
  auto r = p.validate();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pcie.gen"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("3..7"), std::string::npos) << r.error().message;
  p = PcieParams{};
  p.lanes = 12;
  r = p.validate();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pcie.lanes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("1, 2, 4, 8, 16, 32"), std::string::npos) << r.error().message;
  p = PcieParams{};
  p.max_payload = Bytes(300);
  r = p.validate();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pcie.max_payload"), std::string::npos) << r.error().message;
  p = PcieParams{};
  p.write_latency = SimTime::ns(-1);
  EXPECT_FALSE(p.validate().ok());
}

TEST(Pcie, DescribeShowsGenerationWidthAndEffectiveBandwidth) {
  EXPECT_EQ(describe(link(5, 16)), "Gen5 x16 (57.6 GB/s effective)");
  EXPECT_EQ(describe(link(6, 16)), "Gen6 x16 (111.1 GB/s effective)");
  EXPECT_EQ(describe(link(4, 16)), "Gen4 x16 (28.8 GB/s effective)");
}

TEST(Pcie, ParseRoundTripsEveryLinkAndAuto) {
  PcieParams base;
  base.max_payload = Bytes(512);
  for (int gen = 3; gen <= 7; ++gen) {
    for (int lanes : {1, 2, 4, 8, 16, 32}) {
      const auto r = parse_pcie(link_name(link(gen, lanes)), base);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->gen, gen);
      EXPECT_EQ(r->lanes, lanes);
      EXPECT_FALSE(r->auto_size);
      EXPECT_EQ(r->max_payload.count(), 512);  // the rest comes from base
    }
  }
  const auto upper = parse_pcie("GEN4X16", base);
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(link_name(*upper), "gen4x16");
  base.auto_size = false;
  const auto automatic = parse_pcie("Auto", base);
  ASSERT_TRUE(automatic.ok());
  EXPECT_TRUE(automatic->auto_size);
}

TEST(Pcie, ParseRejectsBadWidthsAndShapesListingTheForms) {
  const auto r = parse_pcie("gen5x12", PcieParams{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'gen5x12'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("pcie.lanes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("auto"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("gen5x16"), std::string::npos) << r.error().message;
  for (const char* bad : {"gen8x16", "gen5", "gen5x", "gen5x16x", "pcie5x16", "", "x16"}) {
    EXPECT_FALSE(parse_pcie(bad, PcieParams{}).ok()) << bad;
  }
}

}  // namespace
}  // namespace stepsim::nic
