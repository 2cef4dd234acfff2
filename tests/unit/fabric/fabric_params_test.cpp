#include "stepsim/fabric/fabric_params.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace stepsim::fabric {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// 100 links whose ports have 8 lanes.
const std::vector<int> kHundredLinks(100, 8);

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
  EXPECT_EQ(p.validate().error().message,
            "fabric.cell (1KiB) is out of range (from the mtu, 4KiB, to 4MiB)");
  p.cell = Bytes(kMaxCellBytes + 1);
  EXPECT_FALSE(p.validate().ok());
}

// fabric.cell, the one parameter `run --set` and `bench --cell` set: its lower bound is the MTU
// (a cell stands for whole MTU packets), so 6 KiB is a cell over a 4 KiB MTU and not over 8 KiB.
TEST(FabricParams, TheCellParameterIsBoundedByTheMtu) {
  FabricParams p;
  const config::ParamTable t = fabric_param_table(p);
  EXPECT_EQ(p.cell_size, Bytes(64 << 10));
  EXPECT_EQ(p.cell, Bytes(0));  // packet fidelity until use_cells()
  ASSERT_TRUE(t.set("fabric.cell", "6KiB").ok());
  EXPECT_EQ(p.cell_size, Bytes(6 << 10));
  EXPECT_EQ(p.cell, Bytes(0));
  p.use_cells();
  EXPECT_EQ(p.segment(), Bytes(6 << 10));
  EXPECT_TRUE(p.validate().ok());
  const auto small = t.set("fabric.cell", "2KiB");
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().message,
            "fabric.cell: '2KiB' is out of range (from the mtu, 4KiB, to 4MiB)");
  EXPECT_FALSE(t.set("fabric.cell", "5MiB").ok());
  ASSERT_TRUE(t.set("fabric.mtu", "8KiB").ok());
  EXPECT_FALSE(t.set("fabric.cell", "6KiB").ok());
  // The MTU raised after the cell: validate() holds the same bound.
  EXPECT_EQ(p.validate().error().message,
            "fabric.cell (6KiB) is out of range (from the mtu, 8KiB, to 4MiB)");
}

TEST(FabricParams, FaultsParseFromTheCommandLineForms) {
  std::vector<FaultSpec> f;
  ASSERT_TRUE(parse_fault("down:17@20us", kHundredLinks, f).ok());
  ASSERT_TRUE(parse_fault("up:17@60us", kHundredLinks, f).ok());
  ASSERT_TRUE(parse_fault("lanes:3@1.5us=4", kHundredLinks, f).ok());
  ASSERT_TRUE(parse_fault("flap:5@10us,20us,5us,3", kHundredLinks, f).ok());
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
  const auto far = parse_fault("down:300@1us", kHundredLinks, f);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("link 300 does not exist (the topology has 100 links, 0..99)"),
            std::string::npos);
  EXPECT_NE(far.error().message.find("forms: down:LINK@TIME"), std::string::npos);
  EXPECT_NE(parse_fault("cut:3@1us", kHundredLinks, f).error().message.find("unknown kind 'cut'"),
            std::string::npos);
  EXPECT_NE(parse_fault("down:3@1", kHundredLinks, f).error().message.find("it has no unit"),
            std::string::npos);
  EXPECT_NE(parse_fault("lanes:3@1us", kHundredLinks, f).error().message.find("lanes needs =N"),
            std::string::npos);
  EXPECT_NE(parse_fault("flap:3@1us,2us,5us,2", kHundredLinks, f)
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

// Issue 15: a flap whose last cycle lies past SimTime's range gave a lookahead violation; a
// lanes fault could leave more lanes than the port has.
TEST(FabricParams, FaultBoundsCatchOverflowAndExcessLanes) {
  std::vector<FaultSpec> f;
  const std::vector<int> lanes = {8, 4};
  auto flap = parse_fault("flap:0@0us,9000000s,1s,3", lanes, f);
  ASSERT_FALSE(flap.ok());
  EXPECT_TRUE(has(flap.error().message, "the last flap ends after 1000000s"));
  auto many = parse_fault("flap:0@0us,2us,1us,999999999", lanes, f);
  ASSERT_FALSE(many.ok());
  EXPECT_TRUE(has(many.error().message, "COUNT 999999999 is out of range"));
  auto excess = parse_fault("lanes:0@1us=1000", lanes, f);
  ASSERT_FALSE(excess.ok());
  EXPECT_TRUE(has(excess.error().message, "lanes left 1000 is out of range (1..8"));
  auto five = parse_fault("lanes:1@1us=5", lanes, f);
  ASSERT_FALSE(five.ok());
  EXPECT_TRUE(has(five.error().message, "lanes left 5 is out of range (1..4, the lanes of link 1"));
  EXPECT_FALSE(parse_fault("down:0@2000000s", lanes, f).ok());
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(parse_fault("lanes:0@1us=4", lanes, f).ok());
  EXPECT_TRUE(parse_fault("flap:0@10us,20us,5us,1000", lanes, f).ok());
  EXPECT_EQ(f.size(), 1u + 2000u);
}

// Generated fault specs (kinds, links, times, counts, lanes, junk): the parser never crashes,
// never produces more than 2 x kMaxFlapCount events, and any spec it accepts has every fault
// time within kLatestFault and lanes within the port.
TEST(FabricParams, GeneratedFaultSpecsAreAcceptedInBoundsOrRejectedCleanly) {
  const std::vector<int> lanes = {8, 4, 2, 1};
  const auto links = static_cast<std::uint32_t>(lanes.size());
  const char* kinds[] = {"down", "up", "lanes", "flap", "flop", ""};
  const char* times[] = {"0us",     "1us", "9000000s", "1000000s",
                         "999999s", "5ns", "1e30s",    "nan",
                         "-1us",    "",    "1.5ps",    "18446744073709551616ps"};
  const char* counts[] = {"0",         "1",          "3", "1000000", "1000001",
                          "999999999", "4294967297", "",  "-1",      "x"};
  std::mt19937_64 rng(1515);
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string kind = kinds[rng() % std::size(kinds)];
    const std::string link = rng() % 10 == 0 ? "99999999999" : std::to_string(rng() % (links + 2));
    auto time = [&] { return std::string(times[rng() % std::size(times)]); };
    std::string text = kind + ":" + link + "@";
    if (kind == "flap") {
      text += time() + "," + time() + "," + time() + "," + counts[rng() % std::size(counts)];
    } else if (kind == "lanes") {
      text += time() + "=" + std::to_string(static_cast<int>(rng() % 20) - 2);
    } else {
      text += time();
    }
    if (rng() % 10 == 0) text.erase(rng() % text.size(), 1);
    std::vector<FaultSpec> faults;
    Result<bool> r = Error{""};
    ASSERT_NO_THROW(r = parse_fault(text, lanes, faults)) << text;
    if (!r) {
      EXPECT_TRUE(has(r.error().message, "fault '")) << text << ": " << r.error().message;
      EXPECT_TRUE(faults.empty()) << text;
      continue;
    }
    ++accepted;
    EXPECT_LE(faults.size(), 2u * static_cast<std::size_t>(kMaxFlapCount)) << text;
    for (const FaultSpec& f : faults) {
      EXPECT_GE(f.at, SimTime::zero()) << text;
      EXPECT_LE(f.at, kLatestFault) << text;
      EXPECT_LE(f.lanes, lanes[f.link]) << text;
    }
  }
  EXPECT_GT(accepted, 300);
}

}  // namespace
}  // namespace stepsim::fabric
