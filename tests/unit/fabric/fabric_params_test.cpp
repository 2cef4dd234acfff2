#include "stepsim/fabric/fabric_params.hpp"

#include <gtest/gtest.h>

namespace stepsim::fabric {
namespace {

TEST(FabricParams, DefaultsFollowTheEcnBeforePfcRule) {
  const FabricParams p;
  EXPECT_TRUE(p.validate().ok());
  EXPECT_LT(p.ecn.kmin, p.ecn.kmax);
  EXPECT_LT(p.ecn.kmax, p.pfc.xon);  // DOMAIN.md section 3: Kmin < Kmax < XON < XOFF
  EXPECT_LT(p.pfc.xon, p.pfc.xoff);
}

TEST(FabricParams, ValidateNamesWhatIsWrong) {
  FabricParams p;
  p.pfc.xon = Bytes(200'000);
  EXPECT_NE(p.validate().error().message.find("PFC needs xon < xoff"), std::string::npos);
  p = FabricParams{};
  p.routing = "ugal";
  EXPECT_NE(p.validate().error().message.find("allowed: minimal, valiant"), std::string::npos);
  p = FabricParams{};
  p.lane_ber = {1e-5, 0.9};
  EXPECT_FALSE(p.validate().ok());
}

TEST(FabricParams, CellsAreFromTheMtuToFourMiB) {
  FabricParams p;
  EXPECT_EQ(p.segment(), p.mtu);  // packet fidelity
  p.cell = Bytes(64 << 10);
  EXPECT_TRUE(p.validate().ok());
  EXPECT_EQ(p.segment(), Bytes(64 << 10));
  p.cell = Bytes(1024);
  EXPECT_NE(p.validate().error().message.find("cell must be 0"), std::string::npos);
  p.cell = Bytes(kMaxCellBytes + 1);
  EXPECT_FALSE(p.validate().ok());
}

TEST(FabricParams, FaultsParseFromTheCommandLineForms) {
  std::vector<FaultSpec> f;
  ASSERT_TRUE(parse_fault("down:17@20us", 100, f).ok());
  ASSERT_TRUE(parse_fault("up:17@60us", 100, f).ok());
  ASSERT_TRUE(parse_fault("lanes:3@1.5us=4", 100, f).ok());
  ASSERT_TRUE(parse_fault("flap:5@10us,20us,5us,3", 100, f).ok());
  ASSERT_EQ(f.size(), 3u + 6u);
  EXPECT_EQ(f[0].kind, FaultSpec::Kind::kDown);
  EXPECT_EQ(f[0].link, 17u);
  EXPECT_EQ(f[0].at, SimTime::us(20));
  EXPECT_EQ(f[2].kind, FaultSpec::Kind::kLanes);
  EXPECT_EQ(f[2].lanes, 4);
  EXPECT_EQ(f[2].at, SimTime::ns(1500));
  // Flapping: down at 10, 30, 50 us; up 5 us later each time.
  EXPECT_EQ(f[3].kind, FaultSpec::Kind::kDown);
  EXPECT_EQ(f[3].at, SimTime::us(10));
  EXPECT_EQ(f[4].kind, FaultSpec::Kind::kUp);
  EXPECT_EQ(f[4].at, SimTime::us(15));
  EXPECT_EQ(f[7].at, SimTime::us(50));
}

TEST(FabricParams, BadFaultsSayWhyAndShowTheForms) {
  std::vector<FaultSpec> f;
  const auto far = parse_fault("down:300@1us", 100, f);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("link 300 does not exist (the topology has 100 links, 0..99)"),
            std::string::npos);
  EXPECT_NE(far.error().message.find("forms: down:LINK@TIME"), std::string::npos);
  EXPECT_NE(parse_fault("cut:3@1us", 100, f).error().message.find("unknown kind 'cut'"),
            std::string::npos);
  EXPECT_NE(parse_fault("down:3@1", 100, f).error().message.find("it has no unit"),
            std::string::npos);
  EXPECT_NE(parse_fault("lanes:3@1us", 100, f).error().message.find("lanes needs =N"),
            std::string::npos);
  EXPECT_NE(parse_fault("flap:3@1us,2us,5us,2", 100, f)
                .error()
                .message.find("down for less than the period"),
            std::string::npos);
  EXPECT_TRUE(f.empty());
}

}  // namespace
}  // namespace stepsim::fabric
