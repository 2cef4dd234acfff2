// The generators' count formulas (topology_counts.hpp) against the topologies they build: every
// shipped file and variations of each generator's shapes (partial population, bundled spines
// and cores, oversubscription, breakout, rail groups, planes, NVLink domains, dragonfly group
// counts), and a 1M-server description counted without being built.
#include "stepsim/topology/topology_counts.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::topology {
namespace {

// Counts of `spec` by formula and by build, compared field by field: success, or which counts
// differ (or why either could not be had).
::testing::AssertionResult tc_counts_match(const TopologySpec& spec) {
  const auto formula = topology_counts(spec);
  if (!formula.ok()) return ::testing::AssertionFailure() << "formula: " << formula.error().message;
  const auto built = generate_topology(spec);
  if (!built.ok()) return ::testing::AssertionFailure() << "build: " << built.error().message;
  const TopologyCounts b = count_topology(*built);
  const TopologyCounts& f = *formula;
  const std::pair<const char*, std::pair<std::uint64_t, std::uint64_t>> fields[] = {
      {"servers", {f.servers, b.servers}},
      {"switches", {f.switches, b.switches}},
      {"ports", {f.ports, b.ports}},
      {"links", {f.links, b.links}},
      {"edge_switches", {f.edge_switches, b.edge_switches}},
      {"gpus", {f.gpus, b.gpus}}};
  bool ok = true;
  std::string diff;
  for (const auto& [name, v] : fields) {
    if (v.first == v.second) continue;
    ok = false;
    diff += std::string(" ") + name + ": formula " + std::to_string(v.first) + ", built " +
            std::to_string(v.second) + ";";
  }
  return ok ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << diff;
}

using TcParams = std::vector<std::pair<std::string, std::string>>;

// "kind k=v k=v ...", for the failure messages.
std::string tc_describe(const std::string& kind, const TcParams& kv) {
  std::string what = kind;
  for (const auto& [k, v] : kv) what += " " + k + "=" + v;
  return what;
}

TopologySpec tc_spec(const std::string& kind, TcParams kv, const std::string& port = "400G") {
  TopologySpec s;
  s.kind = kind;
  s.port = port;
  for (auto& [k, v] : kv) s.params[k] = v;
  return s;
}

TEST(TopologyCounts, EveryShippedFileByFormulaAsBuilt) {
  const std::filesystem::path dir = std::filesystem::path(STEPSIM_SOURCE_DIR) / "topologies";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    const auto spec = load_topology_spec(entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    EXPECT_TRUE(tc_counts_match(*spec)) << entry.path().filename().string();
    ++files;
  }
  EXPECT_GE(files, 20);
}

TEST(TopologyCounts, FatTreeShapes) {
  const std::vector<TcParams> shapes = {
      {{"k", "4"}},
      {{"k", "8"}, {"servers", "37"}},                  // partial pods, bundled cores
      {{"k", "8"}, {"servers", "5"}},                   // one leaf and a half
      {{"k", "8"}, {"servers", "3"}},                   // one leaf: no spine
      {{"k", "8"}, {"tiers", "2"}, {"servers", "13"}},  // 2 tiers, bundled spines
      {{"k", "12"}, {"oversubscription", "2"}, {"servers", "100"}},
      {{"k", "12"}, {"spine_oversubscription", "2"}, {"servers", "150"}},
      {{"k", "8"}, {"nics_per_server", "2"}, {"gpus_per_server", "8"}, {"servers", "20"}},
      {{"k", "8"}, {"gpus_per_server", "4"}, {"nvlink_domain", "16"}, {"servers", "32"}},
  };
  for (const TcParams& kv : shapes) {
    EXPECT_TRUE(tc_counts_match(tc_spec("fat_tree", kv))) << tc_describe("fat_tree", kv);
  }
  TopologySpec breakout = tc_spec("fat_tree", {{"k", "8"}, {"leaf_breakout", "2"}});
  breakout.cables["server_leaf"].port = "200G";
  EXPECT_TRUE(tc_counts_match(breakout)) << "fat_tree leaf_breakout 2";
}

TEST(TopologyCounts, RailOptimizedAndDragonflyShapes) {
  for (const TcParams& kv : std::vector<TcParams>{
           {{"servers", "40"}, {"switch_radix", "8"}},
           {{"servers", "9"}, {"switch_radix", "8"}, {"tiers", "2"}},
           {{"servers", "64"}, {"switch_radix", "16"}, {"nics_per_server", "2"}},
           {{"servers", "36"}, {"gpus_per_server", "4"}, {"nvlink_domain", "72"}},
       }) {
    EXPECT_TRUE(tc_counts_match(tc_spec("rail_optimized", kv)))
        << tc_describe("rail_optimized", kv);
  }
  for (const TcParams& kv : std::vector<TcParams>{
           {},
           {{"groups", "5"}},
           {{"routers_per_group", "6"},
            {"hosts_per_router", "3"},
            {"global_links_per_router", "4"},
            {"groups", "7"}},
           {{"routers_per_group", "1"}, {"groups", "2"}},
       }) {
    EXPECT_TRUE(tc_counts_match(tc_spec("dragonfly", kv))) << tc_describe("dragonfly", kv);
  }
}

TEST(TopologyCounts, AMillionServersCountedWithoutBuilding) {
  // 2^20 servers of 8 GPUs on 8 planes of radix-256 3-tier Clos: each plane has 8,192 leaves of
  // 128 servers, 64 pods of 128 leaves and 128 spines, 128 columns of 32 cores (64 pods x 128
  // uplinks / 256 ports).
  const auto c =
      topology_counts(tc_spec("rail_optimized", {{"servers", "1048576"}, {"switch_radix", "256"}}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->servers, 1048576u);
  EXPECT_EQ(c->gpus, 8u * 1048576u);
  EXPECT_EQ(c->edge_switches, 8u * 8192u);
  EXPECT_EQ(c->switches, 8u * (8192u + 64u * 128u + 128u * 32u));
  // Per plane: a link per server, 128 uplinks per leaf, 128 per spine.
  EXPECT_EQ(c->links, 8u * (1048576u + 8192u * 128u + 64u * 128u * 128u));
  // The generator's own checks still apply: an odd radix is refused by name.
  const auto odd =
      topology_counts(tc_spec("rail_optimized", {{"servers", "8"}, {"switch_radix", "7"}}));
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("topology.switch_radix"), std::string::npos)
      << odd.error().message;
}

}  // namespace
}  // namespace stepsim::topology
