// Topology files: the YAML format, its error messages, and every shipped file.
#include "stepsim/topology/topology_loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "stepsim/topology/topology_metrics.hpp"
#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

const char* const kK4 = R"(topology:
  name: small
  kind: fat_tree
  k: 4
  port: 400G
  cables:
    server_leaf: {kind: dac, length: 2m}
    leaf_spine: {kind: aoc, length: 30m}
    spine_core: {kind: optics, length: 300m, port: 800G}
  ber: 1e-9
  phy: {phy_latency: 90ns, dsp_latency: 150ns}
)";

// The error of `text` (which must fail), loaded as "t.yaml".
std::string error_of(const std::string& text) {
  const auto t = parse_topology(text, "t.yaml");
  EXPECT_FALSE(t.ok()) << "loaded although it should not:\n" << text;
  return t.ok() ? "" : t.error().message;
}

// kK4 with one line replaced.
std::string k4_with(const std::string& from, const std::string& to) {
  std::string s = kK4;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(TopologyLoader, ReadsEveryFieldOfTheFormat) {
  const auto loaded = parse_topology(kK4, "t.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Topology& t = *loaded;
  EXPECT_EQ(t.name, "small");
  EXPECT_EQ(t.generator, "fat_tree");
  EXPECT_EQ(t.server_count(), 16u);
  EXPECT_EQ(t.phy.phy_latency, SimTime::ns(90));
  ASSERT_EQ(t.port_types.size(), 2u);
  EXPECT_EQ(t.link_classes, (std::vector<std::string>{"server_leaf", "leaf_spine", "spine_core"}));
  for (const Link& l : t.links) {
    EXPECT_EQ(l.ber, 1e-9);
    switch (l.link_class) {
      case 0:
        EXPECT_EQ(l.cable, CableKind::kDac);
        EXPECT_EQ(l.latency, SimTime::ps(2 * 4300 + 90'000));
        EXPECT_EQ(t.port_types[l.port_type].name, "400G");
        break;
      case 1:
        EXPECT_EQ(l.cable, CableKind::kAoc);
        EXPECT_EQ(l.length, Length::m(30));
        break;
      default:
        EXPECT_EQ(l.cable, CableKind::kOptics);
        EXPECT_EQ(l.latency, SimTime::ps(300 * 4900 + 90'000 + 2 * 150'000));
        EXPECT_EQ(t.port_types[l.port_type].name, "800G");
    }
  }
  EXPECT_EQ(t.lp_graph().min_latency(), SimTime::ps(2 * 4300 + 90'000));
}

TEST(TopologyLoader, DefaultsComeFromTheGenerator) {
  const auto loaded = parse_topology("topology: {kind: fat_tree, k: 4, port: 800G}", "dir/x.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->name, "x");
  EXPECT_EQ(testing::switches_in_tier(*loaded, 3), 4u) << "tiers defaults to 3";
  const auto stats = link_class_stats(*loaded);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].cables, std::vector<CableKind>{CableKind::kDac});
  EXPECT_EQ(stats[2].cables, std::vector<CableKind>{CableKind::kOptics});
  EXPECT_EQ(loaded->links[0].ber, 0.0);
}

TEST(TopologyLoader, UnknownKeyListsTheKnownKeys) {
  const std::string e = error_of(k4_with("  k: 4\n", "  k: 4\n  spines: 3\n"));
  EXPECT_EQ(e.rfind("t.yaml:5: topology.spines: unknown key for kind fat_tree (known keys: name, "
                    "kind, port, ber, cables, phy, k, tiers, servers, oversubscription, "
                    "gpus_per_server, nics_per_server, spine_oversubscription, leaf_breakout, "
                    "nvlink_domain)",
                    0),
            0u)
      << e;
}

TEST(TopologyLoader, BadUnitNamesTheKeyPathAndTheUnits) {
  const std::string e = error_of(k4_with("length: 30m", "length: 30q"));
  EXPECT_NE(e.find("t.yaml:8: topology.cables.leaf_spine.length: '30q' is not a length: unknown "
                   "unit 'q'"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("um, mm, cm, m, km"), std::string::npos) << e;
}

TEST(TopologyLoader, UnknownKindListsTheKinds) {
  const std::string e = error_of(k4_with("kind: fat_tree", "kind: torus"));
  EXPECT_EQ(e,
            "t.yaml:3: topology.kind: unknown topology kind 'torus' (allowed: dragonfly, "
            "fat_tree, rail_optimized)");
}

TEST(TopologyLoader, OddKIsRejectedAtItsLine) {
  const std::string e = error_of(k4_with("k: 4", "k: 5"));
  EXPECT_EQ(e.rfind("t.yaml:4: topology.k: 5 is odd; it must be even", 0), 0u) << e;
}

TEST(TopologyLoader, OutOfRangeAndNonIntegerValuesNameTheRange) {
  EXPECT_EQ(error_of(k4_with("k: 4", "k: 400")),
            "t.yaml:4: topology.k: 400 is out of range (allowed: an integer from 2 to 128: switch "
            "radix (ports per switch); even)");
  EXPECT_NE(error_of(k4_with("k: 4", "k: 4.5")).find("topology.k: '4.5' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("  k: 4\n", ""))
                .find("t.yaml: topology.k: missing; kind fat_tree "
                      "needs it"),
            std::string::npos);
}

TEST(TopologyLoader, CableErrorsNameTheClassAndTheChoices) {
  EXPECT_NE(error_of(k4_with("kind: aoc", "kind: copper"))
                .find("t.yaml:8: topology.cables.leaf_spine.kind: unknown cable kind 'copper' "
                      "(allowed: dac"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("leaf_spine:", "leaf_spin:"))
                .find("t.yaml:8: topology.cables.leaf_spin: unknown link class for kind fat_tree "
                      "(known: server_leaf, leaf_spine, spine_core)"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("length: 2m", "lenght: 2m"))
                .find("topology.cables.server_leaf.lenght: unknown key (known keys: kind, length, "
                      "port, ber)"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("port: 800G", "port: 900G"))
                .find("t.yaml:9: topology.cables.spine_core.port: unknown port type '900G' "
                      "(allowed: "),
            std::string::npos);
}

TEST(TopologyLoader, CommonValueErrors) {
  EXPECT_NE(error_of(k4_with("  port: 400G\n", ""))
                .find("t.yaml: topology.port: missing; the port type of the links (allowed: "),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("ber: 1e-9", "ber: 0.7"))
                .find("t.yaml:10: topology.ber: 0.7 is out of range (a pre-FEC bit error rate "
                      "from 0 to 0.5)"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("phy_latency: 90ns", "phy_latency: 90"))
                .find("t.yaml:11: topology.phy.phy_latency: '90' is not a time: it has no unit"),
            std::string::npos);
  EXPECT_NE(error_of(k4_with("phy_latency", "fec_latency"))
                .find("topology.phy.fec_latency: unknown key (known keys: phy_latency, "
                      "dsp_latency, fiber_delay_per_m, dac_delay_per_m)"),
            std::string::npos);
}

TEST(TopologyLoader, StructureErrors) {
  EXPECT_EQ(error_of("topology:\n  kind: fat_tree\n  k: 4\n  k: 6\n  port: 400G\n"),
            "t.yaml:4: key 'k' given twice in the same map (first at line 3)");
  EXPECT_EQ(error_of("topology:\n  kind: fat_tree\n  k: [4]\n"),
            "t.yaml:3: topology.k: expected a single value, not a list");
  EXPECT_EQ(error_of("topology:\n  kind: fat_tree\n  k:\n"), "t.yaml:3: topology.k: has no value");
  EXPECT_EQ(error_of("topolgy: {kind: fat_tree}\n"),
            "t.yaml:1: topolgy: unknown top-level key (a topology file holds only 'topology')");
  EXPECT_EQ(error_of("# nothing\n"), "t.yaml: missing top-level key 'topology'");
  EXPECT_NE(error_of("topology:\n  cables: 3\n").find("t.yaml:2: topology.cables: expected a map"),
            std::string::npos);
}

TEST(TopologyLoader, SyntaxErrorsReportFileAndLine) {
  const std::string e = error_of("topology:\n  kind: fat_tree\n  k: [4\n  port: 400G\n");
  EXPECT_EQ(e.rfind("t.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  const std::string tab = error_of("topology:\n  kind: fat_tree\n\tk: 4\n");
  EXPECT_EQ(tab.rfind("t.yaml:3:", 0), 0u) << tab;
}

TEST(TopologyLoader, MissingFileIsAUserError) {
  const auto t = load_topology("/nonexistent/x.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "cannot read topology file '/nonexistent/x.yaml': no such file");
}

TEST(TopologyLoader, BuildTopologyLeavesOtherSectionsToTheirReaders) {
  const YAML::Node root =
      YAML::Load("workload: {model: gpt3}\ntopology: {kind: dragonfly, port: 800G}\n");
  const auto t = build_topology(root, "scenario.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->server_count(), 72u);
}

TEST(TopologyLoader, EveryShippedFileLoads) {
  const std::filesystem::path dir = std::filesystem::path(STEPSIM_SOURCE_DIR) / "topologies";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const auto t = load_topology(entry.path().string());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->name, entry.path().stem().string()) << "name matches the file name";
    EXPECT_GE(t->server_count(), 2u);
    EXPECT_TRUE(server_diameter(*t).connected);
    ++files;
  }
  EXPECT_GE(files, 9);
}

TEST(TopologyLoader, ShippedFatTreesHaveTheirHostCounts) {
  const std::pair<const char*, std::size_t> files[] = {
      {"fat-tree-k4.yaml", 16}, {"fat-tree-k16.yaml", 1024}, {"fat-tree-k28.yaml", 5488}};
  for (const auto& [file, hosts] : files) {
    const auto t = load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + file);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->server_count(), hosts) << file;
    EXPECT_EQ(t->port_types[0].name, "400G");
  }
}

}  // namespace
}  // namespace stepsim::topology

namespace stepsim::topology {
namespace {

// Issue 15: a zero link latency (zero lookahead) was an internal error; absurd lengths and PHY
// latencies are out of range. All are user errors naming the file, line and key.
TEST(TopologyLoader, PhysicallyImpossibleLinksAreUserErrors) {
  const std::string head = "topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n";
  auto zero =
      parse_topology(head + "  phy:\n    phy_latency: 0ns\n    dac_delay_per_m: 0ns\n", "z.yaml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("a link needs a positive latency"), std::string::npos)
      << zero.error().message;
  EXPECT_EQ(zero.error().message.rfind("z.yaml", 0), 0u) << zero.error().message;
  auto longer = parse_topology(head + "  cables:\n    leaf_spine: {kind: aoc, length: 9000000km}\n",
                               "l.yaml");
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.error().message.find("l.yaml:7: topology.cables.leaf_spine.length: "
                                        "'9000000km' is out of range (1um..1000km)"),
            std::string::npos)
      << longer.error().message;
  auto slow = parse_topology(head + "  phy:\n    phy_latency: 100000s\n", "s.yaml");
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("topology.phy.phy_latency: '100000s' is out of range"),
            std::string::npos)
      << slow.error().message;
  // A zero PHY latency with a real cable is fine: the cable's delay keeps the latency positive.
  EXPECT_TRUE(parse_topology(head + "  phy:\n    phy_latency: 0ns\n", "ok.yaml").ok());
}

}  // namespace
}  // namespace stepsim::topology
