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
  FabricParams q;
  q.routing = "ugal";
  EXPECT_NE(q.validate().error().message.find("allowed: minimal, valiant"), std::string::npos);
  FabricParams r;
  r.lane_ber = {1e-5, 0.9};
  EXPECT_FALSE(r.validate().ok());
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

namespace stepsim::fabric {
namespace {

TEST(FabricParamTable, EveryKeyRoundTripsThroughItsText) {
  // The listing, scenario YAML and --set all rely on printing a value and parsing it back.
  FabricParams p;
  p.ber_override = 1e-6;
  p.sw.dt_alpha = 0.25;
  const config::ParamTable t = fabric_param_table(p);
  ASSERT_GE(t.params().size(), 20u);
  for (const config::Param& x : t.params()) {
    EXPECT_EQ(x.key.rfind("fabric.", 0), 0u) << x.key;
    const std::string before = x.get();
    ASSERT_TRUE(t.set(x.key, before).ok()) << x.key << " = " << before;
    EXPECT_EQ(x.get(), before) << x.key;
  }
  EXPECT_TRUE(p.validate().ok());
}

TEST(FabricParamTable, SetsTheFieldsTheModelReads) {
  FabricParams p;
  const config::ParamTable t = fabric_param_table(p);
  ASSERT_TRUE(t.apply("fabric.ecn_kmin=10KB").ok());
  ASSERT_TRUE(t.apply("fabric.ecn_kmax=40KB").ok());
  ASSERT_TRUE(t.apply("fabric.ecn_pmax=0.5").ok());
  ASSERT_TRUE(t.apply("fabric.pfc_xoff=200KB").ok());
  ASSERT_TRUE(t.apply("fabric.pfc_xon=100KB").ok());
  ASSERT_TRUE(t.apply("fabric.dt_alpha=2").ok());
  ASSERT_TRUE(t.apply("fabric.switch_latency=500ns").ok());
  ASSERT_TRUE(t.apply("fabric.lb=spray").ok());
  ASSERT_TRUE(t.apply("fabric.ber=topology").ok());
  EXPECT_EQ(p.ecn.kmin, Bytes(10'000));
  EXPECT_EQ(p.ecn.kmax, Bytes(40'000));
  EXPECT_EQ(p.ecn.pmax, 0.5);
  EXPECT_EQ(p.pfc.xoff, Bytes(200'000));
  EXPECT_EQ(p.pfc.xon, Bytes(100'000));
  EXPECT_EQ(p.sw.dt_alpha, 2.0);
  EXPECT_EQ(p.sw.latency, SimTime::ns(500));
  EXPECT_EQ(p.lb.policy, "spray");
  EXPECT_LT(p.ber_override, 0);
  // The YAML form of a scenario's fabric: section reaches the same fields.
  ASSERT_TRUE(t.load_yaml_text("fabric:\n  ecn_kmin: 5KB\n  pfc: false\n", "test.yaml").ok());
  EXPECT_EQ(p.ecn.kmin, Bytes(5'000));
  EXPECT_FALSE(p.pfc.enabled);
}

TEST(FabricParamTable, RejectsBadValuesNamingKeyAndRange) {
  FabricParams p;
  const config::ParamTable t = fabric_param_table(p);
  for (const char* bad : {"nan", "-1", "0.6", "1e-3x"}) {
    auto r = t.set("fabric.ber", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("fabric.ber: '"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(t.set("fabric.ecn_pmax", "1.5").error().message.find("out of range (0..1)"),
            std::string::npos);
  EXPECT_NE(
      t.set("fabric.lb", "random")
          .error()
          .message.find(
              "unknown load-balancing policy 'random' (allowed: adaptive, ecmp, flowlet, spray)"),
      std::string::npos);
  EXPECT_NE(t.set("fabric.kmin", "1KB").error().message.find("unknown key (allowed: fabric.lb"),
            std::string::npos);
  EXPECT_EQ(p.ber_override, -1);  // nothing bad was stored
}

}  // namespace
}  // namespace stepsim::fabric
