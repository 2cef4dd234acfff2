// The spread partitioner: switches round-robin over the ranks, then each switch's servers placed
// so that the servers' weights plus the switch's own weight split evenly over the ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "stepsim/pdes/partition.hpp"

namespace stepsim::pdes {
namespace {

constexpr LpId kSpreadServersPerLeaf = 8;
constexpr LpId kSpreadLeaves = 4;
constexpr LpId kSpreadSpines = 2;
constexpr LpId kSpreadServers = kSpreadServersPerLeaf * kSpreadLeaves;
constexpr std::int64_t kSpreadServerWeight = 10;
constexpr std::int64_t kSpreadSwitchWeight = 40;

// A leaf-spine fabric as the topologies number it: servers first (ids 0..31), then the leaves
// (tier 1), then the spines (tier 2). A leaf's events are half its servers' (40 against 80).
LpGraph spread_leaf_spine() {
  const LpId n = kSpreadServers + kSpreadLeaves + kSpreadSpines;
  LpGraph g(n, "leaf-spine");
  for (LpId s = 0; s < kSpreadServers; ++s) {
    g.set_vertex_weight(s, kSpreadServerWeight);
    g.add_edge(s, kSpreadServers + s / kSpreadServersPerLeaf, SimTime::ns(100), 10);
  }
  for (LpId l = 0; l < kSpreadLeaves; ++l) {
    const LpId leaf = kSpreadServers + l;
    g.set_vertex_weight(leaf, kSpreadSwitchWeight);
    g.set_vertex_tier(leaf, 1);
    for (LpId p = 0; p < kSpreadSpines; ++p) {
      g.add_edge(leaf, kSpreadServers + kSpreadLeaves + p, SimTime::ns(100), 20);
    }
  }
  for (LpId p = 0; p < kSpreadSpines; ++p) {
    g.set_vertex_weight(kSpreadServers + kSpreadLeaves + p, kSpreadSwitchWeight);
    g.set_vertex_tier(kSpreadServers + kSpreadLeaves + p, 2);
  }
  g.finalize();
  return g;
}

// Per rank, one leaf's window: its servers' weights plus the leaf's weight on the leaf's rank.
std::vector<std::int64_t> spread_leaf_group_load(const std::vector<int>& owner, LpId leaf_index,
                                                 int parts) {
  std::vector<std::int64_t> load(static_cast<std::size_t>(parts), 0);
  for (LpId s = leaf_index * kSpreadServersPerLeaf; s < (leaf_index + 1) * kSpreadServersPerLeaf;
       ++s) {
    load[static_cast<std::size_t>(owner[s])] += kSpreadServerWeight;
  }
  load[static_cast<std::size_t>(owner[kSpreadServers + leaf_index])] += kSpreadSwitchWeight;
  return load;
}

TEST(SpreadPartition, SwitchesGoRoundRobinAndEachLeafsWindowSplitsEvenly) {
  const LpGraph g = spread_leaf_spine();
  const auto spread = make_partitioner("spread");
  ASSERT_TRUE(spread.ok()) << spread.error().message;
  for (const int parts : {2, 4}) {
    SCOPED_TRACE(parts);
    const std::vector<int> owner = spread.value()->partition(g, parts);
    // Every LP on exactly one rank in range, no rank empty.
    ASSERT_EQ(owner.size(), g.size());
    const auto q = evaluate_partition(g, owner, parts);
    ASSERT_TRUE(q.ok()) << q.error().message;
    // Switches, in id order, go to ranks 0, 1, 2, ... in turn.
    for (LpId k = 0; k < kSpreadLeaves + kSpreadSpines; ++k) {
      EXPECT_EQ(owner[kSpreadServers + k], static_cast<int>(k) % parts) << "switch " << k;
    }
    // One leaf's servers and the leaf itself: every rank within one server's weight of the
    // mean (cyclic puts half the servers beside the leaf: 80 against 40 at 2 ranks).
    for (LpId l = 0; l < kSpreadLeaves; ++l) {
      const std::vector<std::int64_t> load = spread_leaf_group_load(owner, l, parts);
      const std::int64_t mean =
          (kSpreadServersPerLeaf * kSpreadServerWeight + kSpreadSwitchWeight) / parts;
      for (int p = 0; p < parts; ++p) {
        EXPECT_LE(std::abs(load[static_cast<std::size_t>(p)] - mean), kSpreadServerWeight)
            << "leaf " << l << " rank " << p;
      }
    }
    // The whole graph: every rank within one switch's weight of the mean.
    const double mean_load =
        static_cast<double>(kSpreadServers * kSpreadServerWeight +
                            (kSpreadLeaves + kSpreadSpines) * kSpreadSwitchWeight) /
        parts;
    EXPECT_LE(q->imbalance, 1.0 + static_cast<double>(kSpreadSwitchWeight) / mean_load);
    // Deterministic: every rank computes it and all must agree.
    EXPECT_EQ(owner, spread.value()->partition(g, parts));
    EXPECT_EQ(owner, make_partitioner("spread").value()->partition(g, parts));
  }
  // One rank owns everything.
  const std::vector<int> one = spread.value()->partition(g, 1);
  EXPECT_TRUE(std::all_of(one.begin(), one.end(), [](int p) { return p == 0; }));
}

TEST(SpreadPartition, CyclicFailsTheLeafWindowBalanceSpreadMeets) {
  // The property above is one a partitioner blind to switches' events misses.
  const LpGraph g = spread_leaf_spine();
  const std::vector<int> cyclic = make_partitioner("cyclic").value()->partition(g, 2);
  const std::vector<int> spread = make_partitioner("spread").value()->partition(g, 2);
  std::int64_t cyclic_worst = 0;
  std::int64_t spread_worst = 0;
  for (LpId l = 0; l < kSpreadLeaves; ++l) {
    const auto c = spread_leaf_group_load(cyclic, l, 2);
    const auto s = spread_leaf_group_load(spread, l, 2);
    cyclic_worst = std::max(cyclic_worst, std::abs(c[0] - c[1]));
    spread_worst = std::max(spread_worst, std::abs(s[0] - s[1]));
  }
  EXPECT_EQ(cyclic_worst, kSpreadSwitchWeight);  // 40 + 4 servers against 4 servers
  EXPECT_EQ(spread_worst, 0);                    // 40 + 2 servers against 6 servers
}

}  // namespace
}  // namespace stepsim::pdes
