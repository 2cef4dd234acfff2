// The double binary tree (src/collective/tree_algorithm.cpp) moves every byte exactly once up
// and once down each of its edges: on n single-GPU servers its n - 1 network edges carry 2 S
// each; on 2 x 8 GPUs the chains inside the servers carry 2 x 7 x 2 S over NVLink and the one
// server edge 2 S over the network. A wrong tree (a missing or doubled edge, a piece sent twice)
// moves a different amount.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

CollectiveRun run_tree(const std::string& topology, int gpus, std::int64_t bytes) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + topology).value();
  CollectiveParams p;
  p.algorithm = "tree";
  CollectiveSpec spec;
  spec.bytes = bytes;
  return testing::run_collective_once(topo, make_communicator(topo, gpus).value(), spec, p,
                                      fabric::FabricParams{});
}

TEST(Tree, EveryServerEdgeCarriesTheDataOnceUpAndOnceDown) {
  const std::int64_t S = 16 << 20;  // 8 channels of 2 MiB
  const CollectiveRun r = run_tree("fat-tree-k4.yaml", 16, S);
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(2 * 15 * S));
  EXPECT_EQ(r.result.nvlink_bytes, 0u);
}

TEST(Tree, ChainsInsideServersAndOneEdgeBetween) {
  const std::int64_t S = 16 << 20;
  const CollectiveRun r = run_tree("toy-2server.yaml", 16, S);
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(2 * 7 * 2 * S));
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(2 * S));
}

}  // namespace
}  // namespace stepsim::collective
