// coll.p2p.channels_per_peer and coll.p2p.nvl_chunk's `auto` (collective.cpp resolve_p2p).
//
// The rule, read from NCCL's graph/paths.cc (ncclTopoGetNchannels, ncclTopoComputeP2pChannels,
// NCCL 2.29+): across servers the channels per peer are ceil(NIC GB/s / 14), 14 being
// NCCL_P2P_PER_CHANNEL_NET_BW, rounded up to a power of 2, then halved while they times
// ceil(ranks / 8) exceed the p2p channels (16 on multi-server H100), at least 1. Derived:
//   400G = 50 GB/s: ceil(50 / 14) = 4 -> 4;  800G = 100: 8 -> 8;  1.6T = 200: 15 -> 16.
//   2 x 8 (2 groups): 400G 4 (8 <= 16), 800G 8 (16 <= 16), 1.6T 16 -> 8.
//   4 x 8 (4 groups): 400G 4 (16 <= 16), 800G 8 -> 4, 1.6T 16 -> 8 -> 4.
//   6 x 8 (6 groups): 400G 4 -> 2 (12 <= 16), 800G 8 -> 4 -> 2, 1.6T -> 2.
// NCCL's init.cc computeBuffSizes moves every p2p peer of a multi-server communicator in
// NCCL_P2P_NET_CHUNKSIZE steps (128 KiB), NVLink ones too; in one server NCCL_P2P_NVL_CHUNKSIZE.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

DataRate p2p_auto_test_gbps(int g) {
  return DataRate::gbps(g);
}

TEST(P2pAuto, ChannelsPerPeerFollowNcclsRuleAcrossServers) {
  struct P2pAutoCase {
    int gbps, servers, expect;
  };
  for (const P2pAutoCase c :
       {P2pAutoCase{400, 2, 4}, P2pAutoCase{800, 2, 8}, P2pAutoCase{1600, 2, 8},
        P2pAutoCase{400, 4, 4}, P2pAutoCase{800, 4, 4}, P2pAutoCase{1600, 4, 4},
        P2pAutoCase{400, 6, 2}, P2pAutoCase{800, 6, 2}, P2pAutoCase{1600, 6, 2}}) {
    EXPECT_EQ(nccl_p2p_channels_per_peer(8 * c.servers, c.servers, p2p_auto_test_gbps(c.gbps)),
              c.expect)
        << c.gbps << "G on " << c.servers << " x 8";
  }
  // Before the cap, the NIC's rate alone (few enough ranks that one group fits: 2 servers of 4).
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 2, p2p_auto_test_gbps(400)), 4);
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 2, p2p_auto_test_gbps(800)), 8);
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 2, p2p_auto_test_gbps(1600)), 16);
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 2, p2p_auto_test_gbps(100)), 1);  // 12.5 GB/s
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 2, p2p_auto_test_gbps(200)), 2);  // 25 GB/s
  // Many servers: halved down to 1, not below.
  EXPECT_EQ(nccl_p2p_channels_per_peer(1024, 128, p2p_auto_test_gbps(400)), 1);
  // One server: the 32 p2p channels (NVLink's count is above them).
  EXPECT_EQ(nccl_p2p_channels_per_peer(8, 1, p2p_auto_test_gbps(400)), 32);
}

TEST(P2pAuto, ResolveKeepsExplicitValuesAndFollowsTheCommunicator) {
  CollectiveParams p;
  EXPECT_EQ(p.p2p_channels_per_peer, CollectiveParams::kP2pAuto);
  EXPECT_EQ(p.p2p_nvl_chunk, CollectiveParams::kP2pAuto);
  const CollectiveParams across = resolve_p2p(p, Kind::kAllToAll, 32, 4, p2p_auto_test_gbps(400));
  EXPECT_EQ(across.p2p_channels_per_peer, 4);
  EXPECT_EQ(across.p2p_nvl_chunk, 128 * 1024);  // coll.p2p.net_chunk
  const CollectiveParams one = resolve_p2p(p, Kind::kAllToAll, 8, 1, p2p_auto_test_gbps(400));
  EXPECT_EQ(one.p2p_nvl_chunk, 512 * 1024);
  EXPECT_EQ(one.p2p_channels_per_peer, 32);
  const CollectiveParams ep = resolve_p2p(p, Kind::kEpDispatch, 32, 4, p2p_auto_test_gbps(400));
  EXPECT_EQ(ep.p2p_channels_per_peer, 2);
  EXPECT_EQ(ep.p2p_nvl_chunk, 512 * 1024);
  p.p2p_channels_per_peer = 3;
  p.p2p_nvl_chunk = 64 * 1024;
  p.p2p_net_chunk = 256 * 1024;
  const CollectiveParams forced = resolve_p2p(p, Kind::kAllToAll, 32, 4, p2p_auto_test_gbps(1600));
  EXPECT_EQ(forced.p2p_channels_per_peer, 3);
  EXPECT_EQ(forced.p2p_nvl_chunk, 64 * 1024);
  p.p2p_nvl_chunk = CollectiveParams::kP2pAuto;
  EXPECT_EQ(resolve_p2p(p, Kind::kAllToAll, 32, 4, p2p_auto_test_gbps(400)).p2p_nvl_chunk,
            256 * 1024);  // follows coll.p2p.net_chunk
}

TEST(P2pAuto, KeysTakeAutoOrAValueInRange) {
  CollectiveParams p;
  const config::ParamTable t = collective_param_table(p);
  EXPECT_EQ(t.find("coll.p2p.channels_per_peer")->get(), "auto");
  EXPECT_EQ(t.find("coll.p2p.nvl_chunk")->get(), "auto");
  ASSERT_TRUE(t.set("coll.p2p.channels_per_peer", "16").ok());
  EXPECT_EQ(p.p2p_channels_per_peer, 16);
  ASSERT_TRUE(t.set("coll.p2p.nvl_chunk", "128KiB").ok());
  EXPECT_EQ(p.p2p_nvl_chunk, 128 * 1024);
  ASSERT_TRUE(t.set("coll.p2p.channels_per_peer", "auto").ok());
  EXPECT_EQ(p.p2p_channels_per_peer, CollectiveParams::kP2pAuto);
  const auto bad = t.set("coll.p2p.channels_per_peer", "0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("auto"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(t.set("coll.p2p.nvl_chunk", "1").ok());
}

// At 1.6T on 2 x 8 the per-peer window binds with stepsim's former defaults, NCCL 2.18-2.28's 2
// channels per peer and 512 KiB NVLink pieces: a NIC has 8 peers x 2 channels x 2 chunks x
// 128 KiB = 4 MiB in flight, 21 us of its goodput, while a piece's loop also waits on its PXN
// hop behind up to 15 flows' 512 KiB on the GPU's NVLink (about 20 us), and AllToAll stays near
// 93% of (n-1)/(n-G) x goodput. Either of NCCL's values lifts it within 4% of the bound (256 MiB
// per GPU): 8 channels (`auto`, 4 times the window) or 128 KiB NVLink steps (a quarter of the
// queue).
TEST(P2pAuto, AutoLiftsTheWindowAt16T) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server-1.6t.yaml")
          .value();
  const int n = 16;
  const Communicator comm = make_communicator(topo, n).value();
  const fabric::FabricParams fp;
  const DataRate port = topo.link_rate(topo.ports[comm.gpus[0].nic].link);
  const double nic =
      static_cast<double>(fabric::rdma_goodput(port, Bytes(fp.mtu)).bits_per_second()) / 8 / 1e9;
  const double bound = (n - 1.0) / (n - 8) * nic;
  const std::int64_t S = std::int64_t{256} << 20;
  CollectiveSpec spec;
  spec.kind = Kind::kAllToAll;
  spec.bytes = S;
  const auto run = [&](int channels, std::int64_t nvl_chunk) {
    CollectiveParams p;
    p.apply_gpu(gpu::gpu_preset("h100").value());
    p.p2p_channels_per_peer = channels;
    p.p2p_nvl_chunk = nvl_chunk;
    const auto r = testing::run_collective_once(topo, comm, spec, p, fp, SimTime::s(10));
    EXPECT_TRUE(r.result.complete());
    return busbw_factor(Kind::kAllToAll, n) * static_cast<double>(S) /
           (static_cast<double>(r.result.time_ps) * 1e-3);
  };
  constexpr int kAuto = CollectiveParams::kP2pAuto;
  const double auto_bw = run(kAuto, kAuto);
  const double former = run(2, 512 << 10);
  EXPECT_LE(auto_bw, bound);
  EXPECT_GE(auto_bw, 0.96 * bound);
  EXPECT_LT(former, 0.96 * bound);
  EXPECT_GT(former, 0.88 * bound);
  EXPECT_DOUBLE_EQ(auto_bw, run(8, 128 << 10));  // what auto is here
  EXPECT_GE(run(8, 512 << 10), 0.96 * bound);    // the channels alone
  EXPECT_GE(run(2, 128 << 10), 0.96 * bound);    // the NVLink steps alone
}

}  // namespace
}  // namespace stepsim::collective
