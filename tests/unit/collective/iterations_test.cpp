// One collective repeated back to back in one run (run_collective_iterations): one iteration is
// run_collective's run exactly; each server starts its next iteration the moment its GPUs have
// finished the last; the iterations share their connections; SHARP is refused.
#include "stepsim/collective/iterations.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::collective {
namespace {

struct Case {
  topology::Topology topo;
  Communicator comm;
  CollectiveSpec spec;
  CollectiveParams p;
  nic::NicParams nic;
  fabric::FabricParams fp;
  pdes::EngineOptions opt;
};

// 2 servers x 8 GPUs (NVLink inside, 400G rails between), a 4 MiB ring AllReduce.
Case toy() {
  Case c;
  c.topo = topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml")
               .value();
  c.comm = make_communicator(c.topo, 16).value();
  c.spec.kind = Kind::kAllReduce;
  c.spec.bytes = 4 << 20;
  c.nic.cc.algorithm = "none";
  c.opt.end = SimTime::s(1);
  return c;
}

IteratedRun iterate(const Case& c, int iterations) {
  pdes::SerialSync sync;
  auto r =
      run_collective_iterations(c.topo, c.comm, c.spec, c.p, c.nic, c.fp, iterations, sync, c.opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

TEST(Iterations, OneIterationIsTheSingleRun) {
  const Case c = toy();
  pdes::SerialSync sync;
  const auto single = run_collective(c.topo, c.comm, c.spec, c.p, c.nic, c.fp, sync, c.opt);
  ASSERT_TRUE(single.ok());
  const IteratedRun one = iterate(c, 1);
  ASSERT_EQ(one.results.size(), 1u);
  EXPECT_EQ(one.rdma.stats.digest, single->rdma.stats.digest);
  EXPECT_EQ(one.rdma.stats.events, single->rdma.stats.events);
  EXPECT_EQ(one.results[0].gpu_done_ps, single->result.gpu_done_ps);
  EXPECT_EQ(one.results[0].network_bytes, single->result.network_bytes);
  for (std::int64_t s : one.started_ps[0]) EXPECT_EQ(s, 0);
}

TEST(Iterations, EachServerStartsTheNextWhenItsGpusFinishedTheLast) {
  const Case c = toy();
  pdes::SerialSync sync;
  const auto single = run_collective(c.topo, c.comm, c.spec, c.p, c.nic, c.fp, sync, c.opt);
  ASSERT_TRUE(single.ok());
  const IteratedRun r = iterate(c, 4);
  ASSERT_EQ(r.results.size(), 4u);
  const auto n = static_cast<std::size_t>(c.comm.size());
  for (std::size_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(r.results[k].complete()) << k;
    // Every iteration moves what one does, over the same connections.
    EXPECT_EQ(r.results[k].network_bytes, single->result.network_bytes) << k;
    EXPECT_EQ(r.results[k].nvlink_bytes, single->result.nvlink_bytes) << k;
    if (k == 0) continue;
    for (std::size_t g = 0; g < n; ++g) {
      // A server starts iteration k when the last of its GPUs finished k - 1.
      std::int64_t server_done = 0;
      for (std::size_t h = 0; h < n; ++h) {
        if (c.comm.gpus[h].server == c.comm.gpus[g].server) {
          server_done = std::max(server_done, r.results[k - 1].gpu_done_ps[h]);
        }
      }
      EXPECT_EQ(r.started_ps[k][g], server_done) << "iteration " << k << " GPU " << g;
      EXPECT_GT(r.results[k].gpu_done_ps[g], r.started_ps[k][g]);
    }
    // On the idle fabric an iteration takes what a single run takes, within 2%.
    const std::int64_t first = *std::min_element(r.started_ps[k].begin(), r.started_ps[k].end());
    EXPECT_NEAR(static_cast<double>(r.results[k].time_ps - first),
                static_cast<double>(single->result.time_ps),
                0.02 * static_cast<double>(single->result.time_ps))
        << k;
  }
  // Four iterations of the single run's connections: the same endpoints, four times the messages.
  EXPECT_EQ(r.rdma.rdma.endpoints.size(), single->rdma.rdma.endpoints.size());
  std::uint64_t packets_one = 0;
  std::uint64_t packets_four = 0;
  for (const auto& e : single->rdma.rdma.endpoints) packets_one += e.packets;
  for (const auto& e : r.rdma.rdma.endpoints) packets_four += e.packets;
  EXPECT_EQ(packets_four, 4 * packets_one);
}

TEST(Iterations, SharpIsRefused) {
  Case c = toy();
  c.p.algorithm = "sharp";
  pdes::SerialSync sync;
  const auto r =
      run_collective_iterations(c.topo, c.comm, c.spec, c.p, c.nic, c.fp, 2, sync, c.opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("sharp runs one iteration only"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::collective
