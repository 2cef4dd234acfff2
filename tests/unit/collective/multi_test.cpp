// Concurrent collectives on the same NICs and fabric (run_collectives).
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "tests/support/collective_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::collective {
namespace {

// 4 servers with 2 GPUs each sharing one 400G NIC per server.
topology::Topology shared_nics() {
  auto t = testing::leaf_spine(2, 2, 2);
  for (topology::NodeId v = 0; v < 4; ++v) t.nodes[v].gpus = 2;
  return t;
}

MultiRun run_both(const topology::Topology& topo, const std::vector<Communicator>& comms,
                  std::int64_t bytes) {
  std::vector<CollectiveSpec> specs(comms.size());
  for (CollectiveSpec& s : specs) s.bytes = bytes;
  nic::NicParams nic;
  nic.cc.algorithm = "none";
  const CollectiveParams p;
  const fabric::FabricParams fp;
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = SimTime::s(1);
  auto r = run_collectives(topo, comms, specs, p, nic, fp, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

TEST(Concurrent, OneCollectiveAloneIsTheSingleRun) {
  const auto topo = shared_nics();
  const Communicator a = make_communicator(topo, std::vector<std::uint32_t>{0, 2, 4, 6}).value();
  const std::int64_t S = 8 << 20;
  CollectiveSpec spec;
  spec.bytes = S;
  const CollectiveParams p;
  const fabric::FabricParams fp;
  const auto single = testing::run_collective_once(topo, a, spec, p, fp);
  const auto multi = run_both(topo, {a}, S);
  EXPECT_EQ(multi.results[0].gpu_done_ps, single.result.gpu_done_ps);
  EXPECT_EQ(multi.results[0].network_bytes, single.result.network_bytes);
  EXPECT_EQ(multi.rdma.stats.events, single.rdma.stats.events);
}

TEST(Concurrent, TwoRingsOnTheSameNicsShareTheirBandwidth) {
  // GPU 0 and GPU 1 of every server each run an AllReduce ring over the same NICs: together
  // each gets half the NIC, so a large AllReduce takes twice as long as alone.
  const auto topo = shared_nics();
  const Communicator a = make_communicator(topo, std::vector<std::uint32_t>{0, 2, 4, 6}).value();
  const Communicator b = make_communicator(topo, std::vector<std::uint32_t>{1, 3, 5, 7}).value();
  const std::int64_t S = 64 << 20;
  const auto alone = run_both(topo, {a}, S);
  const auto both = run_both(topo, {a, b}, S);
  ASSERT_EQ(both.results.size(), 2u);
  const double t1 = static_cast<double>(alone.results[0].time_ps);
  for (const CollectiveResult& r : both.results) {
    EXPECT_TRUE(r.complete());
    EXPECT_NEAR(static_cast<double>(r.time_ps) / t1, 2.0, 0.15);
    EXPECT_EQ(r.network_bytes, alone.results[0].network_bytes);
  }
}

}  // namespace
}  // namespace stepsim::collective
