// NCCL's per-peer pipelining depth over the network (pairwise_algorithm.cpp, p2p_window in
// algorithm_declarations.hpp). NCCL's p2p over the network uses shared buffers
// (transport/net.cc): each channel of a source GPU has NCCL_SHARED_STEPS = 16 chunk slots,
// shared by the ops of one batch on it; a batch holds the peers of one schedule group (init.cc
// ncclP2pSchedule: gcd(8, G) ranks of one remote server), and sendProxyProgress lets each of its
// nsubs ops have maxDepth = min(NCCL_STEPS, 16 / nsubs) chunks in flight. So an AllToAll's flow
// to a server of 8 GPUs has 2 chunks per channel in flight (4 on 2 channels), where a lone
// SendRecv peer has 8 (16 on 2 channels). Each piece's slot is taken again only after the
// source's proxy latency (coll.p2p.proxy_overhead) and the network round trip, so a flow of
// m pieces needs at least floor((m - 1) / window) x proxy_overhead: with a large overhead the
// window sets the time, and the time follows 1 / window.
#include <gtest/gtest.h>

#include "src/collective/algorithm_declarations.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

CollectiveParams pw_params() {
  CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("h100").value());
  p.protocol = "simple";
  // Small chunks and a long proxy latency: the window, not the wire, sets the time.
  p.p2p_channels_per_peer = 2;  // the window the tests below derive
  p.p2p_net_chunk = 8 << 10;
  p.p2p_proxy_overhead = SimTime::us(100);
  return p;
}

double pw_seconds(Kind kind, int n, std::int64_t S, const CollectiveParams& p) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/rail-128gpu-800g.yaml")
          .value();
  CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = S;
  const fabric::FabricParams plain;
  const auto r = testing::run_collective_once(topo, make_communicator(topo, n).value(), spec, p,
                                              plain, SimTime::s(10));
  EXPECT_TRUE(r.result.complete());
  return static_cast<double>(r.result.time_ps) * 1e-12;
}

TEST(P2pWindow, NcclsSharedSlotsPerPeer) {
  CollectiveParams p;  // coll.slots 8 (NCCL_STEPS)
  p.p2p_channels_per_peer = 2;
  EXPECT_EQ(p2p_window(p, 1), 16);  // min(8, 16 / 1) x 2
  EXPECT_EQ(p2p_window(p, 2), 16);  // min(8, 8) x 2
  EXPECT_EQ(p2p_window(p, 3), 10);  // 16 / 3 = 5
  EXPECT_EQ(p2p_window(p, 4), 8);
  EXPECT_EQ(p2p_window(p, 8), 4);   // a remote server's 8 GPUs in one batch
  EXPECT_EQ(p2p_window(p, 32), 4);  // a batch holds 8 at most
  p.slots = 1;
  EXPECT_EQ(p2p_window(p, 1), 2);
  p.p2p_channels_per_peer = 4;
  EXPECT_EQ(p2p_window(p, 8), 4);
}

TEST(P2pWindow, AllToAllFlowsHaveTwoChunksPerChannelInFlight) {
  // 2 servers x 8 H100, AllToAll of 256 KiB per peer in 8 KiB chunks (32 pieces per flow), the
  // proxy's latency 100 us per message. A flow to the other server shares its batch with the 7
  // other GPUs there: 4 pieces in flight, so >= floor(31 / 4) = 7 rounds of 100 us. With NCCL's
  // 16 pieces (the window before, slots x channels) it took 2 rounds and about 3 x 100 us.
  const CollectiveParams p = pw_params();
  const int n = 16;
  const std::int64_t b = 256 << 10;
  const double overhead = p.p2p_proxy_overhead.seconds();
  const double t = pw_seconds(Kind::kAllToAll, n, b * n, p);
  EXPECT_GE(t, 7 * overhead);
  // ... and not much more: ceil(32 / 4) rounds, the receiver's proxy latency once, the base.
  EXPECT_LE(t, 9 * overhead * 1.1 + p.base_latency().seconds());
  // The analytical bound includes the window's rounds and stays below the run.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/rail-128gpu-800g.yaml")
          .value();
  const fabric::FabricParams fp;
  const fabric::Routing routing(topo);
  const kernels::AlphaBeta ab = analytical_bound(topo, routing, make_communicator(topo, n).value(),
                                                 Kind::kAllToAll, b * n, p, fp);
  double bound = 0;
  kernels::alpha_beta({&ab, 1}, {&bound, 1});
  EXPECT_GE(bound, 7 * overhead);
  EXPECT_LE(bound, t);
}

TEST(P2pWindow, ALonePeerKeepsEightChunksPerChannel) {
  // SendRecv over the same 16 GPUs: GPU 7 sends its 256 KiB to GPU 8 over the network, the one
  // peer of its batch: 16 pieces in flight, floor(31 / 16) = 1 round, so well under the
  // AllToAll's 7 rounds (a window that shrank with the peer count of the whole collective, not
  // of the batch, would give SendRecv the AllToAll's time).
  const CollectiveParams p = pw_params();
  const double overhead = p.p2p_proxy_overhead.seconds();
  const double t = pw_seconds(Kind::kSendRecv, 16, 256 << 10, p);
  EXPECT_GE(t, overhead);
  EXPECT_LE(t, 4 * overhead * 1.1 + p.base_latency().seconds());
}

TEST(P2pWindow, AnalyticalBoundWithTheTunersProtocol) {
  // `bench nccl alltoall --fidelity analytical` without --proto: the point-to-point bound priced
  // the bytes at the wire factor of "auto" and aborted (std::bad_variant_access). It prices them
  // at Simple's, the smallest factor, as a lower bound should.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/rail-128gpu-800g.yaml")
          .value();
  const fabric::FabricParams fp;
  const fabric::Routing routing(topo);
  const Communicator comm = make_communicator(topo, 32).value();
  CollectiveParams simple;
  simple.apply_gpu(gpu::gpu_preset("h100").value());
  simple.protocol = "simple";
  CollectiveParams any = simple;
  any.protocol = "auto";
  for (Kind k : {Kind::kAllToAll, Kind::kSendRecv}) {
    kernels::AlphaBeta a;
    ASSERT_NO_THROW(a = analytical_bound(topo, routing, comm, k, std::int64_t{1} << 30, any, fp));
    const kernels::AlphaBeta s = analytical_bound(topo, routing, comm, k, 1 << 30, simple, fp);
    EXPECT_DOUBLE_EQ(a.rate, s.rate);
    EXPECT_LE(a.latency_s, s.latency_s);
  }
}

}  // namespace
}  // namespace stepsim::collective
