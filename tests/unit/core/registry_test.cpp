// Registries (core/registry.hpp): each part declares a one-line description and the parameter
// keys it reads, which `stepsim list` prints; the shipped load balancers and partitioners do.
#include "stepsim/core/registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>

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

// A family whose interface names a traits struct: each part states its traits at registration.
struct Shaped {
  struct Traits {
    bool square = false;
    int corners = 0;
    [[nodiscard]] std::vector<std::string> words() const {
      std::vector<std::string> w;
      if (square) w.emplace_back("square");
      if (corners > 0) w.push_back(std::to_string(corners) + " corners");
      return w;
    }
  };
  virtual ~Shaped() = default;
};
using ShapeRegistry = Registry<Shaped>;
const Registration<ShapeRegistry> kCircle{"circle", [] { return std::make_unique<Shaped>(); },
                                          "no corners"};
const Registration<ShapeRegistry> kSquare{
    "square", [] { return std::make_unique<Shaped>(); }, "four sides", {}, Shaped::Traits{true, 4}};

TEST(Registry, PartsDeclareTheirFamilysTraitsAndOthersKeepTheDefaults) {
  static_assert(std::is_same_v<TestRegistry::Traits, NoTraits>);  // Part declares no Traits
  const Shaped::Traits* square = ShapeRegistry::traits("square");
  ASSERT_NE(square, nullptr);
  EXPECT_TRUE(square->square);
  EXPECT_EQ(square->corners, 4);
  const Shaped::Traits* circle = ShapeRegistry::traits("circle");
  ASSERT_NE(circle, nullptr);
  EXPECT_FALSE(circle->square);
  EXPECT_EQ(circle->corners, 0);
  EXPECT_EQ(ShapeRegistry::traits("triangle"), nullptr);
  const std::vector<RegistryInfo> infos = ShapeRegistry::infos();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_TRUE(infos[0].traits.empty());
  EXPECT_EQ(infos[1].traits, (std::vector<std::string>{"square", "4 corners"}));
}

TEST(Registry, LoadBalancersThatReorderSayItInTheirListing) {
  for (const RegistryInfo& r : fabric::load_balancers()) {
    EXPECT_EQ(r.traits.empty(), !fabric::lb_reorders(r.name)) << r.name;
  }
}

TEST(Registry, PartitionersDescribeThemselves) {
  const std::vector<RegistryInfo> parts = pdes::partitioners();
  ASSERT_EQ(parts.size(), pdes::partitioner_names().size());
  expect_known_keys(parts, config::ParamTable{});
}

}  // namespace
}  // namespace stepsim
