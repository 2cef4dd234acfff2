// Servers whose GPUs share NICs (8 GPUs, 2 or 4 NICs): channels spread over the NICs, and the
// ring's large-message busbw follows the NICs a server has.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/collective/nic_share.hpp"
#include "stepsim/topology/topology_spec.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

// RDMA goodput of a 400G NIC in GB/s: 4 KiB payloads in 4,178 B frames plus 20 B of gap.
constexpr double kSharedNicGBs = 400.0 / 8 * 4096 / (4096 + 62 + 20);

topology::Topology two_servers(int nics) {
  topology::TopologySpec spec;
  spec.kind = "rail_optimized";
  spec.port = "400G";
  spec.params = {{"servers", "2"},
                 {"gpus_per_server", "8"},
                 {"nics_per_server", std::to_string(nics)},
                 {"switch_radix", "64"},
                 {"tiers", "2"}};
  return topology::generate_topology(spec).value();
}

CollectiveRun all_reduce(const topology::Topology& topo, std::int64_t bytes,
                         const CollectiveParams& p = CollectiveParams{}) {
  CollectiveSpec s;
  s.kind = Kind::kAllReduce;
  s.bytes = bytes;
  const fabric::FabricParams plain;  // named: a temporary trips GCC 12's maybe-uninitialized
  return testing::run_collective_once(topo, make_communicator(topo, 16).value(), s, p, plain);
}

TEST(SharedNic, CommunicatorMapsGpuBlocksToNics) {
  const auto topo = two_servers(2);
  const Communicator c = make_communicator(topo, 16).value();
  for (std::uint32_t g = 0; g < 16; ++g) {
    EXPECT_EQ(c.gpus[g].nic, topo.port_id(c.gpus[g].server, (g % 8) / 4)) << g;
  }
  EXPECT_DOUBLE_EQ(nic_share(c), 2.0 / 8);
  const auto gpu = gpu_of_nic_ports(topo);
  EXPECT_EQ(gpu[topo.port_id(1, 1)], 12u);  // server 1's NIC 1 serves its GPUs 4-7
}

TEST(SharedNic, TwoChannelsUseBothNics) {
  // Channel c leaves each server through NIC c mod 2: with 2 channels, both NICs carry data
  // (entering every server at member 0 and then 1 would put both channels on NIC 0).
  const auto topo = two_servers(2);
  CollectiveParams p;
  p.algorithm = "ring";
  p.channels = 2;
  const auto r = all_reduce(topo, 64 << 20, p);
  for (topology::NodeId s : {0u, 1u}) {
    for (std::uint32_t i = 0; i < 2; ++i) {
      EXPECT_GT(r.rdma.fabric.ports[topo.port_id(s, i)].bytes, 10'000'000u)
          << "server " << s << " NIC " << i;
    }
  }
}

TEST(SharedNic, RingBusbwFollowsTheServersNics) {
  // Large AllReduce between two servers: the ring's network hops carry a server's whole
  // busbw, so busbw ~ NICs x one NIC's goodput (NVLink is faster): 2 NICs half of 4.
  const std::int64_t S = 128 << 20;
  CollectiveParams p;
  p.algorithm = "ring";
  double busbw[2] = {};
  for (int i = 0; i < 2; ++i) {
    const auto r = all_reduce(two_servers(2 << i), S, p);
    busbw[i] = r.result.algbw_gbs(S) * busbw_factor(Kind::kAllReduce, 16);
    EXPECT_LE(busbw[i], (2 << i) * kSharedNicGBs) << (2 << i) << " NICs";
    EXPECT_GT(busbw[i], 0.85 * (2 << i) * kSharedNicGBs) << (2 << i) << " NICs";
  }
  EXPECT_NEAR(busbw[1] / busbw[0], 2.0, 0.1);
}

}  // namespace
}  // namespace stepsim::collective
