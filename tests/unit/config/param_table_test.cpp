#include "stepsim/config/param_table.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/nic/nic_params.hpp"

namespace stepsim::config {
namespace {

TEST(ParamTable, EveryNicKeyRoundTripsThroughItsText) {
  // Printing a value and parsing it back must give the same value, for every key: the listing,
  // YAML files and --set all rely on it.
  nic::NicParams p;
  p.cc.hpcc.base_rtt = SimTime::ns(8'500);
  p.cc.dcqcn.g = 1.0 / 128;
  const ParamTable t = nic::nic_param_table(p);
  ASSERT_GT(t.params().size(), 50u);
  for (const Param& x : t.params()) {
    const std::string before = x.get();
    ASSERT_TRUE(t.set(x.key, before).ok()) << x.key << " = " << before;
    EXPECT_EQ(x.get(), before) << x.key;
  }
  EXPECT_TRUE(p.validate().ok());
}

TEST(ParamTable, EveryCollectiveKeyRoundTripsThroughItsText) {
  collective::CollectiveParams p;
  const ParamTable t = collective::collective_param_table(p);
  ASSERT_GT(t.params().size(), 15u);
  for (const Param& x : t.params()) {
    const std::string before = x.get();
    ASSERT_TRUE(t.set(x.key, before).ok()) << x.key << " = " << before;
    EXPECT_EQ(x.get(), before) << x.key;
  }
  EXPECT_TRUE(p.validate().ok());
  auto bad = t.apply("coll.algorithm=collnet");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "coll.algorithm: 'collnet' is not allowed (allowed: ring, tree, nvls, nvls_tree, "
            "sharp, nvls_sharp, auto)");
  bad = t.apply("gpu.model=v100");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "gpu.model: unknown GPU 'v100' (allowed: a100, h100, h800, h200, b200, b300, gb200, "
            "gb300)");
}

TEST(ParamTable, SetsFieldsAndRejectsOutOfRangeValuesNamingTheKey) {
  nic::NicParams p;
  const ParamTable t = nic::nic_param_table(p);
  ASSERT_TRUE(t.apply("transport.rto=20us").ok());
  EXPECT_EQ(p.rto, SimTime::us(20));
  ASSERT_TRUE(t.apply("cc.dcqcn.rate_ai=400Mbps").ok());
  EXPECT_EQ(p.cc.dcqcn.rate_ai, DataRate::bps(400'000'000));
  ASSERT_TRUE(t.apply("nic.pcie=gen5x16").ok());
  EXPECT_FALSE(p.pcie.auto_size);
  EXPECT_EQ(p.pcie.gen, 5);
  ASSERT_TRUE(t.apply("nic.qp_in_order=false").ok());
  EXPECT_FALSE(p.qp_in_order);

  auto bad = t.apply("transport.retry_count=9");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "transport.retry_count: '9' is out of range (0..7)");
  bad = t.apply("cc.algorithm=timely");
  ASSERT_FALSE(bad.ok());
  std::string algorithms;  // the registry's names: a new algorithm does not edit this test
  for (const std::string& n : cc::congestion_control_names()) {
    algorithms += (algorithms.empty() ? "" : ", ") + n;
  }
  EXPECT_EQ(bad.error().message,
            "cc.algorithm: 'timely' is not allowed (allowed: " + algorithms + ")");
  bad = t.apply("transport.rto=fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("transport.rto: "), std::string::npos);
  bad = t.apply("nic.rto=1us");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.find("nic.rto: unknown key (allowed: nic.clock_mhz,"), 0u);
  bad = t.apply("link.ber=1e-5");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "link.ber: unknown key (sections: nic, transport, cc)");
  EXPECT_FALSE(t.apply("rto").ok());
}

TEST(ParamTable, LoadsNestedYamlAndReportsTheLineOfABadKey) {
  nic::NicParams p;
  const ParamTable t = nic::nic_param_table(p);
  const std::string good =
      "cc:\n  algorithm: dcqcn\n  dcqcn:\n    cnp_interval: 5us\n    g: 0.01\n"
      "nic:\n  pkt_gen:\n    units: 4\n";
  ASSERT_TRUE(t.load_yaml_text(good, "x.yaml").ok());
  EXPECT_EQ(p.cc.dcqcn.cnp_interval, SimTime::us(5));
  EXPECT_EQ(p.cc.dcqcn.g, 0.01);
  EXPECT_EQ(p.pkt_gen.units, 4);
  auto bad = t.load_yaml_text("transport:\n  rto: 10us\n  retries: 3\n", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.find("x.yaml:3: transport.retries: unknown key"), 0u);
  bad = t.load_yaml_text("nic:\n  pkt_gen: [1, 2]\n", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "x.yaml:2: nic.pkt_gen: expected a single value");
  bad = t.load_yaml_text("nic: {clock_mhz: 1\n", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.find("x.yaml:"), 0u);
  EXPECT_FALSE(t.load_yaml_file("/no/such/file.yaml").ok());
}

TEST(ParamTable, ShippedParameterFilesLoadAndValidate) {
  for (const char* name : {"dcqcn-400g.yaml", "hpcc.yaml"}) {
    nic::NicParams p;
    const auto r =
        nic::nic_param_table(p).load_yaml_file(std::string(STEPSIM_SOURCE_DIR) + "/params/" + name);
    EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
    EXPECT_TRUE(p.validate().ok()) << name;
  }
}

}  // namespace
}  // namespace stepsim::config
