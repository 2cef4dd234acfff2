// The double binary tree (src/collective/tree_algorithm.cpp) moves every byte exactly once up
// and once down each of its edges: on n single-GPU servers its n - 1 network edges carry 2 S
// each; on 2 x 8 GPUs the chains inside the servers carry 2 x 7 x 2 S over NVLink and the one
// server edge 2 S over the network. A wrong tree (a missing or doubled edge, a piece sent twice)
// moves a different amount.
#include <gtest/gtest.h>

#include <cstdio>

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

// Bus bandwidth of a 128 MiB tree AllReduce over the first `servers` servers' 8 GPUs each (8 rail
// planes of 32 servers per leaf), at cell fidelity (64 KiB cells).
double tree_busbw(const topology::Topology& topo, int servers) {
  CollectiveParams p;
  p.algorithm = "tree";
  CollectiveSpec spec;
  spec.bytes = std::int64_t{128} << 20;
  fabric::FabricParams fp;
  fp.cell = Bytes(64 * 1024);
  const int n = 8 * servers;
  const CollectiveRun r = testing::run_collective_once(topo, make_communicator(topo, n).value(),
                                                       spec, p, fp, SimTime::s(1));
  EXPECT_TRUE(r.result.complete());
  return 2.0 * (n - 1) / n * static_cast<double>(spec.bytes) /
         (static_cast<double>(r.result.time_ps) * 1e-12);
}

TEST(Tree, LargeMessageBusBandwidthStaysFlatAcrossLeaves) {
  // NCCL's tree does not cut a channel's data among the ranks, so its channels do not shrink as
  // the communicator grows; the model's did (64 KiB per GPU and channel, the ring's rule), so
  // from 32 servers on every doubling halved the rails the tree used, and its busbw. 8 servers
  // sit on one leaf, 64 on 2, 128 on 4. (256 servers take 30 s more and reach 91%; 512, 90 s
  // and 88% at 128 MiB, as NCCL's own latency model has it: 2 x log2(servers) hops of ~14 us;
  // docs/collectives.md.)
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/h100-8k-400g.yaml")
          .value();
  const double one_leaf = tree_busbw(topo, 8);
  for (int servers : {64, 128}) {
    const double b = tree_busbw(topo, servers);
    std::printf("tree busbw: %d servers %.2f GB/s (8 servers %.2f)\n", servers, b / 1e9,
                one_leaf / 1e9);
    EXPECT_GT(b, 0.9 * one_leaf) << servers << " servers: " << b / 1e9 << " GB/s against "
                                 << one_leaf / 1e9 << " GB/s on one leaf";
  }
}

}  // namespace
}  // namespace stepsim::collective
