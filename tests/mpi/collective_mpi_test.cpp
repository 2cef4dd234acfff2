// Collectives across MPI ranks: the same completion times, traffic and digest as a one-rank run.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::collective {
namespace {

struct Case {
  const char* topology;
  int gpus;
  Kind kind;
  std::int64_t bytes;
  const char* lb;
  const char* algo = "ring";
};

class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, MatchAOneRankRunBitForBit) {
  const Case c = GetParam();
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + c.topology)
          .value();
  const Communicator comm = make_communicator(topo, c.gpus).value();
  CollectiveParams p;
  p.chunk = 64 * 1024;
  p.algorithm = c.algo;
  nic::NicParams nic;  // DCQCN on
  fabric::FabricParams fp;
  fp.lb.policy = c.lb;
  pdes::EngineOptions opt;
  opt.end = SimTime::s(1);
  CollectiveSpec spec;
  spec.kind = c.kind;
  spec.bytes = c.bytes;
  spec.root = 1;
  pdes::SerialSync serial;
  const auto ref = run_collective(topo, comm, spec, p, nic, fp, serial, opt);
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  EXPECT_GT(ref->result.time_ps, 0);
  for (int threads : {1, 2}) {
    pdes::MpiSync sync;
    opt.threads = threads;
    const auto got = run_collective(topo, comm, spec, p, nic, fp, sync, opt);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->rdma.stats.digest, ref->rdma.stats.digest) << threads << " threads";
    EXPECT_EQ(got->rdma.stats.events, ref->rdma.stats.events);
    EXPECT_EQ(got->result.gpu_done_ps, ref->result.gpu_done_ps);
    EXPECT_EQ(got->result.network_bytes, ref->result.network_bytes);
    EXPECT_EQ(got->result.nvlink_bytes, ref->result.nvlink_bytes);
    ASSERT_EQ(got->sharp.size(), ref->sharp.size());
    for (std::size_t v = 0; v < ref->sharp.size(); ++v) {
      EXPECT_EQ(got->sharp[v].up_in_bytes, ref->sharp[v].up_in_bytes) << v;
      EXPECT_EQ(got->sharp[v].aggregations, ref->sharp[v].aggregations) << v;
      EXPECT_EQ(got->sharp[v].down_out_bytes, ref->sharp[v].down_out_bytes) << v;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Collective, Collectives,
    ::testing::Values(
        Case{"toy-2server.yaml", 16, Kind::kAllReduce, 4 << 20, "ecmp"},
        Case{"toy-2server.yaml", 16, Kind::kBroadcast, 1 << 20, "ecmp"},
        Case{"fat-tree-k4.yaml", 16, Kind::kAllToAll, 2 << 20, "spray"},
        Case{"fat-tree-k4.yaml", 16, Kind::kReduceScatter, 4 << 20, "flowlet"},
        Case{"toy-2server.yaml", 16, Kind::kAllReduce, 4 << 20, "ecmp", "tree"},
        Case{"fat-tree-k4.yaml", 16, Kind::kAllReduce, 1 << 20, "spray", "tree"},
        Case{"fat-tree-k4.yaml", 16, Kind::kAllReduce, 2 << 20, "ecmp", "sharp"},
        Case{"toy-2server.yaml", 16, Kind::kAllReduce, 4 << 20, "ecmp", "sharp"},
        Case{"toy-2server.yaml", 16, Kind::kReduceScatter, 4 << 20, "ecmp", "sharp"},
        Case{"rail-128gpu-800g.yaml", 32, Kind::kAllReduce, 4 << 20, "ecmp", "nvls_tree"},
        Case{"toy-2server.yaml", 16, Kind::kAllReduce, 4 << 20, "ecmp", "nvls_sharp"}));

}  // namespace
}  // namespace stepsim::collective
