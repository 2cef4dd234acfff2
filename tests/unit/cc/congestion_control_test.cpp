// The congestion-control registry: each entry's description, parameters and declared needs.
#include "stepsim/cc/congestion_control.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "stepsim/config/param_table.hpp"

namespace stepsim::cc {
namespace {

CcNeeds needs(const std::string& algorithm) {
  CcParams p;
  p.algorithm = algorithm;
  const auto n = congestion_control_needs(p);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
  return *n;
}

TEST(CongestionControl, EveryAlgorithmHasAOneLineDescription) {
  const auto all = congestion_control_algorithms();
  ASSERT_EQ(all.size(), congestion_control_names().size());
  for (const CcAlgorithmInfo& a : all) {
    EXPECT_FALSE(a.description.empty()) << a.name;
    EXPECT_EQ(a.description.find('\n'), std::string::npos) << a.name;
  }
}

TEST(CongestionControl, NoneNeedsNothingFromTheTransportOrTheFabric) {
  const CcNeeds n = needs("none");
  EXPECT_FALSE(n.int_telemetry);
  EXPECT_FALSE(n.cnp);
  EXPECT_FALSE(n.ack_per_packet);
}

TEST(CongestionControl, AnUnknownAlgorithmHasNoNeedsAndTheErrorListsTheNames) {
  CcParams p;
  p.algorithm = "timely";
  const auto n = congestion_control_needs(p);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("'timely' (allowed: "), std::string::npos);
  for (const std::string& name : congestion_control_names()) {
    EXPECT_NE(n.error().message.find(name), std::string::npos) << name;
  }
}

TEST(CongestionControl, EachAlgorithmBindsItsOwnParametersUnderItsName) {
  CcParams p;
  config::ParamTable t;
  declare_cc_params(t, p);
  // Every key but cc.algorithm is cc.<a registered name>.<key>.
  const auto names = congestion_control_names();
  std::set<std::string> owners;
  for (const config::Param& param : t.params()) {
    if (param.key == "cc.algorithm") continue;
    const auto second = param.key.find('.', 3);
    ASSERT_NE(second, std::string::npos) << param.key;
    owners.insert(param.key.substr(3, second - 3));
  }
  for (const std::string& owner : owners) {
    EXPECT_NE(std::find(names.begin(), names.end(), owner), names.end()) << owner;
  }
  EXPECT_TRUE(owners.count("dcqcn") == 1 && owners.count("hpcc") == 1);
  ASSERT_TRUE(t.apply("cc.algorithm=hpcc").ok());
  EXPECT_EQ(p.algorithm, "hpcc");
  const auto bad = t.apply("cc.algorithm=timely");
  ASSERT_FALSE(bad.ok());
  ASSERT_TRUE(t.apply("cc.hpcc.base_rtt=9us").ok());
  EXPECT_EQ(p.hpcc.base_rtt, SimTime::us(9));
}

// An algorithm whose parameters live in its own file keeps them in CcParams::more.
struct ExampleParams {
  double beta = 0.5;
  SimTime period = SimTime::us(10);
};

TEST(CongestionControl, ParameterBlocksStartAtTheirDefaultsBindAndCopyDeeply) {
  CcParams p;
  EXPECT_EQ(std::as_const(p).more.get<ExampleParams>("example").beta, 0.5);  // not created
  config::ParamTable t;
  ExampleParams& mine = p.more.get<ExampleParams>("example");
  t.real("cc.example.beta", mine.beta, 0, 1, "decrease factor");
  t.time("cc.example.period", mine.period, SimTime::ns(1), SimTime::s(1), "increase period");
  ASSERT_TRUE(t.apply("cc.example.beta=0.25").ok());
  ASSERT_TRUE(t.apply("cc.example.period=3us").ok());
  const CcParams copy = p;  // a NicParams copy carries its own parameters
  p.more.get<ExampleParams>("example").beta = 0.75;
  EXPECT_EQ(copy.more.get<ExampleParams>("example").beta, 0.25);
  EXPECT_EQ(copy.more.get<ExampleParams>("example").period, SimTime::us(3));
  EXPECT_EQ(std::as_const(p).more.get<ExampleParams>("example").beta, 0.75);
}

}  // namespace
}  // namespace stepsim::cc
