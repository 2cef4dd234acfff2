// The generator registry and the parameter declarations every generator makes.
#include "stepsim/topology/generator.hpp"

#include <gtest/gtest.h>

#include <set>

#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::topology {
namespace {

TEST(GeneratorRegistry, KnowsTheThreeKindsAndListsThemInErrors) {
  EXPECT_EQ(generator_names(),
            (std::vector<std::string>{"dragonfly", "fat_tree", "rail_optimized"}));
  for (const auto& name : generator_names()) {
    const auto g = find_generator(name);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ((*g)->name(), name);
  }
  const auto bad = find_generator("torus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown topology kind 'torus' (allowed: dragonfly, fat_tree, rail_optimized)");
}

TEST(GeneratorRegistry, DeclarationsAreCoherent) {
  for (const auto& name : generator_names()) {
    SCOPED_TRACE(name);
    const Generator& g = *find_generator(name).value();
    EXPECT_FALSE(g.description().empty());
    std::set<std::string> keys(common_topology_keys().begin(), common_topology_keys().end());
    for (const ParamSpec& p : g.params()) {
      EXPECT_TRUE(keys.insert(p.name).second) << p.name << " declared twice or clashes";
      EXPECT_LE(p.min, p.max) << p.name;
      EXPECT_FALSE(p.description.empty()) << p.name;
      if (p.default_value) {
        EXPECT_GE(*p.default_value, p.min) << p.name;
        EXPECT_LE(*p.default_value, p.max) << p.name;
      }
    }
    EXPECT_EQ(g.link_classes().size(), 3u);
    for (const LinkClassSpec& c : g.link_classes()) EXPECT_GT(c.length, Length());
  }
}

// What each kind is: a dragonfly has global links between groups (one global hop per minimal
// route, two PFC lanes, valiant routing), a rail-optimized cluster has rail planes (the whole
// step folds its rails), a fat tree neither; the built topology carries its generator's traits.
TEST(GeneratorRegistry, TraitsSayWhatEachKindIsAndTheTopologyCarriesThem) {
  const auto traits = [](const std::string& kind) {
    return find_generator(kind).value()->traits();
  };
  EXPECT_TRUE(traits("dragonfly").global_links);
  EXPECT_FALSE(traits("dragonfly").rail_planes);
  EXPECT_TRUE(traits("rail_optimized").rail_planes);
  EXPECT_FALSE(traits("rail_optimized").global_links);
  EXPECT_FALSE(traits("fat_tree").global_links);
  EXPECT_FALSE(traits("fat_tree").rail_planes);
  TopologySpec spec;
  spec.kind = "rail_optimized";
  spec.port = "400G";
  spec.params = {
      {"servers", "2"}, {"gpus_per_server", "8"}, {"switch_radix", "64"}, {"tiers", "2"}};
  const auto t = generate_topology(spec);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->traits.rail_planes);
  EXPECT_FALSE(t->traits.global_links);
}

TEST(GeneratorParams, ErrorsNameWhereTheValueCameFrom) {
  GeneratorParams p;
  p.set("k", 5, "f.yaml:3: topology.k");
  EXPECT_TRUE(p.has("k"));
  EXPECT_FALSE(p.has("tiers"));
  EXPECT_EQ(p.get("k"), 5);
  EXPECT_EQ(p.get_or("tiers", 3), 3);
  EXPECT_EQ(p.error("k", "is odd").message, "f.yaml:3: topology.k: is odd");
  EXPECT_EQ(p.error("servers", "too many").message, "topology.servers: too many");
  p.note_absent("groups", "f.yaml: topology.groups (derived: a*h + 1)");
  EXPECT_FALSE(p.has("groups"));
  EXPECT_EQ(p.get_or("groups", 9), 9);
  EXPECT_EQ(p.error("groups", "too many").message,
            "f.yaml: topology.groups (derived: a*h + 1): too many");
}

TEST(GeneratorRegistry, DerivedValuesAreNamedInMessages) {
  TopologySpec spec;
  spec.source = "f.yaml";
  spec.kind = "dragonfly";
  spec.port = "400G";
  spec.params = {{"routers_per_group", "256"}, {"hosts_per_router", "256"}};
  const auto t = generate_topology(spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message.rfind("f.yaml: topology.groups (derived: a*h + 1 (the maximum, one "
                                    "link per group pair)): 513 groups x 256 routers x 256 hosts",
                                    0),
            0u)
      << t.error().message;
}

TEST(GeneratorRegistry, DefaultsAreNamedInMessages) {
  TopologySpec spec;
  spec.source = "f.yaml";
  spec.kind = "fat_tree";
  spec.port = "400G";
  spec.params = {{"k", "4"}, {"servers", "20"}};
  spec.lines["topology.servers"] = 7;
  const auto t = generate_topology(spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message.rfind("f.yaml:7: topology.servers: 20 servers do not fit", 0), 0u)
      << t.error().message;
}

}  // namespace
}  // namespace stepsim::topology
