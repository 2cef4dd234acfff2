// Registries (core/registry.hpp): each part declares a one-line description and the parameter
// keys it reads, which `stepsim list` prints; the shipped load balancers and partitioners do.
#include "stepsim/core/registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <utility>

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

// A family whose parts name themselves and whose order means something (the collective
// algorithms': the tuner's tie-break): listed by rank, then name, never by name alone.
struct Ranked {
  explicit Ranked(std::string n) : name_(std::move(n)) {}
  virtual ~Ranked() = default;
  [[nodiscard]] std::string name() const { return name_; }
  [[nodiscard]] std::string description() const { return "the part " + name_; }

 private:
  std::string name_;
};
using RankedRegistry = Registry<Ranked>;
const NamedRegistration<RankedRegistry> kRankedZulu{[] { return std::make_unique<Ranked>("zulu"); },
                                                    10};
const NamedRegistration<RankedRegistry> kRankedAlpha{
    [] { return std::make_unique<Ranked>("alpha"); }, 30};
const NamedRegistration<RankedRegistry> kRankedMike{[] { return std::make_unique<Ranked>("mike"); },
                                                    20};
const NamedRegistration<RankedRegistry> kRankedBravo{
    [] { return std::make_unique<Ranked>("bravo"); }, 20};

TEST(Registry, RankedPartsListByRankThenNameWithOneSharedInstanceEach) {
  const std::vector<std::string> order = {"zulu", "bravo", "mike", "alpha"};
  EXPECT_EQ(RankedRegistry::names(), order);
  const std::vector<RegistryInfo> infos = RankedRegistry::infos();
  ASSERT_EQ(infos.size(), order.size());
  EXPECT_EQ(infos[1].description, "the part bravo");  // the part's own description
  const std::vector<const Ranked*> shared = RankedRegistry::instances();
  ASSERT_EQ(shared.size(), order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_NE(shared[i], nullptr);
    EXPECT_EQ(shared[i]->name(), order[i]);
    EXPECT_EQ(RankedRegistry::instance(order[i]), shared[i]);  // the same instance every time
  }
  EXPECT_EQ(RankedRegistry::instance("yankee"), nullptr);
  // create() still makes a new part; the error lists the names in rank order.
  const auto made = RankedRegistry::create("part", "mike");
  ASSERT_TRUE(made.ok());
  EXPECT_NE(made.value().get(), RankedRegistry::instance("mike"));
  const auto bad = RankedRegistry::create("part", "yankee");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unknown part 'yankee' (allowed: zulu, bravo, mike, alpha)");
}

TEST(Registry, PartitionersDescribeThemselves) {
  const std::vector<RegistryInfo> parts = pdes::partitioners();
  ASSERT_EQ(parts.size(), pdes::partitioner_names().size());
  expect_known_keys(parts, config::ParamTable{});
}

}  // namespace
}  // namespace stepsim
