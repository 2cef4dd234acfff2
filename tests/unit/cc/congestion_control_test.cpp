// The congestion-control registry: each entry's description, parameters and declared needs.
#include "stepsim/cc/congestion_control.hpp"

#include <gtest/gtest.h>

#include <set>

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
  EXPECT_NE(n.error().message.find("'timely' (allowed: dcqcn, hpcc, none)"), std::string::npos);
}

TEST(CongestionControl, EachAlgorithmBindsItsOwnParametersUnderItsName) {
  CcParams p;
  config::ParamTable t;
  declare_cc_params(t, p);
  std::set<std::string> prefixes;
  for (const config::Param& param : t.params()) {
    const auto second = param.key.find('.', 3);
    prefixes.insert(second == std::string::npos ? param.key : param.key.substr(0, second));
  }
  EXPECT_EQ(prefixes, (std::set<std::string>{"cc.algorithm", "cc.dcqcn", "cc.hpcc"}));
  ASSERT_TRUE(t.apply("cc.algorithm=hpcc").ok());
  EXPECT_EQ(p.algorithm, "hpcc");
  const auto bad = t.apply("cc.algorithm=timely");
  ASSERT_FALSE(bad.ok());
  ASSERT_TRUE(t.apply("cc.hpcc.base_rtt=9us").ok());
  EXPECT_EQ(p.hpcc.base_rtt, SimTime::us(9));
}

}  // namespace
}  // namespace stepsim::cc
