// Registries (core/registry.hpp): each part declares a one-line description and the parameter
// keys it reads, which `stepsim list` prints; the shipped load balancers and partitioners do.
#include "stepsim/core/registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/pdes/partition.hpp"

namespace stepsim {
namespace {

struct Part {
  virtual ~Part() = default;
};
using TestRegistry = Registry<Part>;
const Registration<TestRegistry> kPlain{"plain", [] { return std::make_unique<Part>(); }};
const Registration<TestRegistry> kDeclared{
    "declared", [] { return std::make_unique<Part>(); }, "what it models", {"x.timeout", "x.size"}};

TEST(Registry, InfosCarryEachPartsDeclarationSortedByName) {
  const std::vector<RegistryInfo> infos = TestRegistry::infos();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].name, "declared");
  EXPECT_EQ(infos[0].description, "what it models");
  EXPECT_EQ(infos[0].params, (std::vector<std::string>{"x.timeout", "x.size"}));
  EXPECT_EQ(infos[1].name, "plain");
  EXPECT_TRUE(infos[1].description.empty());
  EXPECT_TRUE(infos[1].params.empty());
  EXPECT_TRUE(TestRegistry::create("part", "declared").ok());
}

// Every key a part declares is a key of `table`.
void expect_known_keys(const std::vector<RegistryInfo>& parts, const config::ParamTable& table) {
  std::set<std::string> keys;
  for (const config::Param& p : table.params()) keys.insert(p.key);
  for (const RegistryInfo& r : parts) {
    EXPECT_FALSE(r.description.empty()) << r.name;
    EXPECT_EQ(r.description.find('\n'), std::string::npos) << r.name;
    for (const std::string& k : r.params) EXPECT_TRUE(keys.count(k) == 1) << r.name << ": " << k;
  }
}

TEST(Registry, LoadBalancersDescribeThemselvesAndDeclareFabricKeys) {
  fabric::FabricParams d;
  const std::vector<RegistryInfo> lbs = fabric::load_balancers();
  ASSERT_EQ(lbs.size(), fabric::load_balancer_names().size());
  expect_known_keys(lbs, fabric::fabric_param_table(d));
  for (const RegistryInfo& r : lbs) {
    if (r.name == "flowlet") {
      EXPECT_EQ(r.params, (std::vector<std::string>{"fabric.flowlet_timeout"}));
    }
  }
}

TEST(Registry, PartitionersDescribeThemselves) {
  const std::vector<RegistryInfo> parts = pdes::partitioners();
  ASSERT_EQ(parts.size(), pdes::partitioner_names().size());
  expect_known_keys(parts, config::ParamTable{});
}

}  // namespace
}  // namespace stepsim
