// Issue 7: a 16,384-GPU fabric (2,048 servers x 8, rail-optimized 3-tier fat-tree, 1.6T) builds,
// partitions (METIS, traffic-weighted) and runs a short cell-level collective, with the same
// results on every rank count as on one rank. Runs at 2 ranks only (ctest mpi.scale16k.np2).
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::collective {
namespace {

TEST(Scale16k, ACellLevelTreeAllReduceOver16384GpusMatchesOneRank) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/rail-16k-1.6t.yaml")
          .value();
  const Communicator comm = make_communicator(topo, 16384).value();
  ASSERT_EQ(comm.size(), 16384);
  ASSERT_EQ(comm.gpus_per_server, 8u);
  CollectiveParams p;
  p.algorithm = "tree";
  nic::NicParams nic;  // DCQCN on
  fabric::FabricParams fp;
  fp.cell = Bytes(64 << 10);
  pdes::EngineOptions opt;
  opt.end = SimTime::s(1);
  opt.partitioner = "metis";
  CollectiveSpec spec;
  spec.kind = Kind::kAllReduce;
  spec.bytes = 4 << 20;
  pdes::SerialSync serial;
  const auto ref = run_collective(topo, comm, spec, p, nic, fp, serial, opt);
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  ASSERT_TRUE(ref->result.complete());
  pdes::MpiSync sync;
  const auto got = run_collective(topo, comm, spec, p, nic, fp, sync, opt);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->result.complete());
  EXPECT_EQ(got->rdma.stats.digest, ref->rdma.stats.digest);
  EXPECT_EQ(got->rdma.stats.events, ref->rdma.stats.events);
  EXPECT_EQ(got->result.gpu_done_ps, ref->result.gpu_done_ps);
  EXPECT_EQ(got->result.network_bytes, ref->result.network_bytes);
  // The partition splits the LPs over the ranks, balanced, and cuts a minority of the traffic.
  const pdes::PartitionQuality& q = got->rdma.partition;
  EXPECT_EQ(q.parts, sync.size());
  EXPECT_LT(q.imbalance, 1.1);
  if (sync.size() > 1) {
    EXPECT_GT(q.cut_weight, 0);
    EXPECT_LT(q.cut_weight * 2, q.total_weight);
  }
}

}  // namespace
}  // namespace stepsim::collective
