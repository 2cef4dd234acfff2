#include "stepsim/pdes/partition.hpp"

#include <gtest/gtest.h>

#include "stepsim/pdes/rng.hpp"

namespace stepsim::pdes {
namespace {

// A 2-D grid whose LP ids are scrambled, so that id blocks carry no locality.
LpGraph scrambled_grid(std::uint32_t side, std::vector<LpId>& id_of) {
  const std::uint32_t n = side * side;
  id_of.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) id_of[i] = i;
  Rng rng(1, 99, 0);
  for (std::uint32_t i = n; i > 1; --i) std::swap(id_of[i - 1], id_of[rng.below(i)]);
  LpGraph g(n, "grid");
  for (std::uint32_t y = 0; y < side; ++y) {
    for (std::uint32_t x = 0; x < side; ++x) {
      const std::uint32_t v = y * side + x;
      if (x + 1 < side) g.add_edge(id_of[v], id_of[v + 1], SimTime::ns(100), 10);
      if (y + 1 < side) g.add_edge(id_of[v], id_of[v + side], SimTime::ns(100), 10);
    }
  }
  g.finalize();
  return g;
}

TEST(LpGraph, MergesParallelEdgesAndFindsMinLatency) {
  LpGraph g(4, "t");
  g.add_edge(0, 1, SimTime::ns(500), 2);
  g.add_edge(1, 0, SimTime::ns(300), 3);  // same channel, other direction
  g.add_edge(2, 3, SimTime::us(1), 1);
  g.finalize();
  EXPECT_EQ(g.edge_count(), 2u);
  ASSERT_EQ(g.neighbours(0).size(), 1u);
  EXPECT_EQ(g.neighbours(0)[0].latency, SimTime::ns(300));
  EXPECT_EQ(g.neighbours(0)[0].weight, 5);
  EXPECT_EQ(g.min_latency(), SimTime::ns(300));
}

TEST(LpGraph, AllToAllIsImplicit) {
  LpGraph g(100000, "dense");
  g.connect_all(SimTime::us(1));
  g.finalize();
  EXPECT_TRUE(g.all_to_all());
  EXPECT_EQ(g.edge_count(), 0u);
  EXPECT_EQ(g.min_latency(), SimTime::us(1));
}

TEST(Partition, RegistryKnowsEveryPartitionerAndNamesThemInErrors) {
  EXPECT_TRUE(make_partitioner("block").ok());
  EXPECT_TRUE(make_partitioner("metis").ok());
  EXPECT_TRUE(make_partitioner("cyclic").ok());
  const auto bad = make_partitioner("scotch");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("allowed: block, cyclic, metis, spread"), std::string::npos)
      << bad.error().message;
}

TEST(Partition, BlockIsValidContiguousAndBalancedByWeight) {
  LpGraph g(10, "w");
  for (LpId v = 0; v < 10; ++v) g.set_vertex_weight(v, v < 5 ? 1 : 3);  // total 20
  g.finalize();
  const auto owner = make_partitioner("block").value()->partition(g, 2);
  const auto q = evaluate_partition(g, owner, 2);
  ASSERT_TRUE(q.ok()) << q.error().message;
  for (LpId v = 1; v < 10; ++v) EXPECT_GE(owner[v], owner[v - 1]);  // contiguous
  EXPECT_LE(q->imbalance, 1.2);
  // 7 LPs and 3 parts: every part gets LPs.
  LpGraph h(7, "h");
  h.finalize();
  EXPECT_TRUE(evaluate_partition(h, make_partitioner("block").value()->partition(h, 3), 3).ok());
}

TEST(Partition, MetisCutsFarLessThanBlockOnAScrambledGrid) {
  std::vector<LpId> ids;
  const LpGraph g = scrambled_grid(32, ids);
  const auto block = evaluate_partition(g, make_partitioner("block").value()->partition(g, 4), 4);
  const auto metis = evaluate_partition(g, make_partitioner("metis").value()->partition(g, 4), 4);
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(metis.ok()) << metis.error().message;
  // Block on scrambled ids cuts ~3/4 of the 1984 edges; a good 4-way cut of a 32x32 grid is ~64.
  EXPECT_GT(block->cut_edges, 1200);
  EXPECT_LT(metis->cut_edges, 150);
  EXPECT_LE(metis->imbalance, 1.05);
  // Deterministic: every rank computes it and all must agree.
  EXPECT_EQ(make_partitioner("metis").value()->partition(g, 4),
            make_partitioner("metis").value()->partition(g, 4));
}

TEST(Partition, EvaluateRejectsInvalidPartitions) {
  LpGraph g(4, "g");
  g.add_edge(0, 1, SimTime::ns(1));
  g.finalize();
  EXPECT_FALSE(evaluate_partition(g, {0, 1, 2, 5}, 3).ok());  // part out of range
  EXPECT_FALSE(evaluate_partition(g, {0, 0, 0}, 2).ok());     // wrong length
  const auto empty_part = evaluate_partition(g, {0, 0, 0, 0}, 2);
  ASSERT_FALSE(empty_part.ok());
  EXPECT_NE(empty_part.error().message.find("part 1 owns no LP"), std::string::npos);
  const auto ok = evaluate_partition(g, {0, 1, 1, 1}, 2);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->cut_edges, 1);
}

}  // namespace
}  // namespace stepsim::pdes
