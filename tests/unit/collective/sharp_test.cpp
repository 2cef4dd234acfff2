// SHARP in-network AllReduce: the trees, the traffic each NIC sends, conservation of bytes in
// every switch's aggregation, the bandwidth it reaches against the ring, the switch's ALU limit.
// SHARP AllGather: every shard goes up once unreduced and comes down to every member.
#include "stepsim/collective/sharp.hpp"

#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::collective {
namespace {

// RDMA goodput of a 400G NIC in GB/s: 4 KiB payloads in 4,178 B frames plus 20 B of gap.
constexpr double kSharpNicGBs = 400.0 / 8 * 4096 / (4096 + 62 + 20);

CollectiveRun run(const topology::Topology& topo, int gpus, std::int64_t bytes,
                  const CollectiveParams& p, Kind kind = Kind::kAllReduce) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  const fabric::FabricParams fp;
  return testing::run_collective_once(topo, make_communicator(topo, gpus).value(), spec, p, fp);
}

CollectiveParams algo(const char* a) {
  CollectiveParams p;
  p.algorithm = a;
  return p;
}

TEST(Sharp, TreesAreRootedAtTheSpineAndReachEveryNic) {
  // 2 leaves x 4 single-GPU servers, 2 spines: the tree's root is a spine, the leaves are its
  // children, and each leaf has its 4 NICs as children.
  const auto topo = testing::leaf_spine(2, 2, 4);
  const Communicator comm = make_communicator(topo, 8).value();
  const CollectiveParams p;
  const auto trees = plan_sharp(topo, comm, p).value();
  ASSERT_EQ(trees.size(), 1u);
  const SharpTree& t = trees[0];
  EXPECT_EQ(t.members.size(), 8u);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(topo.nodes[t.nodes[0].sw].tier, 2);
  EXPECT_EQ(t.nodes[0].parent_port, topology::kNone);
  EXPECT_EQ(t.nodes[0].child_ports.size(), 2u);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(topo.nodes[t.nodes[i].sw].tier, 1);
    EXPECT_EQ(t.nodes[i].child_ports.size(), 4u);
    EXPECT_NE(t.nodes[i].parent_port, topology::kNone);
  }
}

TEST(Sharp, EachNicSendsItsDataOnceAndBusbwDoublesTheRings) {
  // A ring AllReduce sends 2(n-1)/n S from every NIC; SHARP sends S up once and gets the sum
  // back once. With one GPU per server (no NVLink phase) busbw tends to 2(n-1)/n x the NIC's
  // goodput, where the ring's tends to the goodput itself.
  const auto topo = testing::leaf_spine(2, 2, 4);
  const int n = 8;
  const std::int64_t S = 64 << 20;
  const auto ring = run(topo, n, S, algo("ring"));
  const auto sharp = run(topo, n, S, algo("sharp"));
  ASSERT_TRUE(sharp.result.complete());
  EXPECT_EQ(ring.result.network_bytes, static_cast<std::uint64_t>(2 * (n - 1) * S));
  EXPECT_EQ(sharp.result.network_bytes, static_cast<std::uint64_t>(n * S));
  const double f = busbw_factor(Kind::kAllReduce, n);
  const double ring_busbw = ring.result.algbw_gbs(S) * f;
  const double sharp_busbw = sharp.result.algbw_gbs(S) * f;
  EXPECT_NEAR(ring_busbw, kSharpNicGBs, 0.04 * kSharpNicGBs);
  EXPECT_LE(sharp_busbw, f * kSharpNicGBs);
  EXPECT_GT(sharp_busbw, 0.9 * f * kSharpNicGBs);
  EXPECT_GT(sharp_busbw, 1.5 * ring_busbw);
  // Every NIC got every result packet back.
  const std::uint64_t packets = (S + 4095) / 4096;
  for (topology::NodeId s = 0; s < 8; ++s) {
    EXPECT_EQ(sharp.rdma.rdma.nics[topo.port_id(s, 0)].in_network_rx, packets) << s;
    EXPECT_EQ(sharp.rdma.rdma.nics[topo.port_id(s, 0)].in_network_tx, packets) << s;
  }
}

TEST(Sharp, EverySwitchReducesEachPacketExactlyOnce) {
  // Conservation in each aggregation: a switch takes its children's streams in and sends one
  // stream up (the reduction); the root turns it around; on the way down each switch sends
  // what it got to every child. A 3-tier fat-tree: leaf, spine (aggregation) and core levels.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/fat-tree-k4.yaml")
          .value();
  const int n = 16;
  const std::int64_t S = 8 << 20;
  const auto r = run(topo, n, S, algo("sharp"));
  ASSERT_TRUE(r.result.complete());
  const Communicator comm = make_communicator(topo, n).value();
  const std::int64_t per_gpu = S / comm.gpus_per_server;
  const auto trees = plan_sharp(topo, comm, algo("sharp")).value();
  ASSERT_EQ(trees.size(), 1u);                   // one GPU per server
  EXPECT_EQ(trees[0].nodes.size(), 1u + 4 + 8);  // a core, a spine per pod, the 8 leaves
  const auto shard = static_cast<std::uint64_t>(per_gpu);
  const std::uint64_t packets = (shard + 4095) / 4096;
  std::uint64_t reduced = 0;
  for (const SharpTreeNode& x : trees[0].nodes) {
    const SharpSwitchStats& s = r.sharp[x.sw];
    const auto children = static_cast<std::uint64_t>(x.child_ports.size());
    EXPECT_EQ(s.up_in_bytes, children * shard) << x.sw;
    EXPECT_EQ(s.aggregations, packets) << x.sw;
    EXPECT_EQ(s.down_out_bytes, children * shard) << x.sw;
    if (x.parent_port == topology::kNone) {
      EXPECT_EQ(s.up_out_bytes, 0u);
      EXPECT_EQ(s.down_in_bytes, 0u);
    } else {
      EXPECT_EQ(s.up_out_bytes, shard) << x.sw;
      EXPECT_EQ(s.down_in_bytes, shard) << x.sw;
    }
    reduced += s.up_in_bytes - s.up_out_bytes;
  }
  // Summed over the tree, n streams came in and one left (at the root, turned around).
  EXPECT_EQ(reduced, static_cast<std::uint64_t>(n) * shard);
  // Switches off the tree saw nothing.
  std::uint64_t off_tree = 0;
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (r.sharp[v].trees == 0) off_tree += r.sharp[v].up_in_bytes + r.sharp[v].down_in_bytes;
  }
  EXPECT_EQ(off_tree, 0u);
}

TEST(Sharp, TheSwitchAluBoundsTheRate) {
  // A slow reduction engine (20 Gb/s) at the leaves, which take 4 children's streams: the
  // collective cannot beat 4 x shard / ALU rate and the ALU is then the bottleneck.
  const auto topo = testing::leaf_spine(2, 2, 4);
  CollectiveParams p = algo("sharp");
  p.sharp_alu = DataRate::gbps(20);
  const std::int64_t S = 4 << 20;
  const auto r = run(topo, 8, S, p);
  const double bound = 4.0 * static_cast<double>(S) / (20e9 / 8);
  const double t = static_cast<double>(r.result.time_ps) * 1e-12;
  EXPECT_GE(t, bound);
  EXPECT_LT(t, 1.1 * bound);
}

TEST(Sharp, AWindowBelowTheBandwidthDelayProductLimitsTheRate) {
  // Two packets in flight per GPU: each round trip through the tree carries 8 KiB, far below
  // the NIC's rate.
  const auto topo = testing::leaf_spine(2, 2, 4);
  CollectiveParams p = algo("sharp");
  p.sharp_window = 8192;
  const std::int64_t S = 1 << 20;
  const auto slow = run(topo, 8, S, p);
  const auto fast = run(topo, 8, S, algo("sharp"));
  EXPECT_GT(slow.result.time_ps, 3 * fast.result.time_ps);
}

TEST(Sharp, WithEightGpusPerServerSharpBeatsTheNicBoundRing) {
  // 2 servers x 8 GPUs, one 800G NIC per GPU: SHARP's NVLink phases and each NIC's single trip
  // of S/8 finish before the ring, which every NIC sends 2(n-1)/n of its share through.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml")
          .value();
  const std::int64_t S = 256 << 20;
  const auto ring = run(topo, 16, S, algo("ring"));
  const auto sharp = run(topo, 16, S, algo("sharp"));
  EXPECT_LT(sharp.result.time_ps, ring.result.time_ps);
  EXPECT_EQ(sharp.result.network_bytes, static_cast<std::uint64_t>(S) * 2);  // 16 x S/8
}

TEST(Sharp, AllGatherSendsEachShardUpOnceAndEveryNicGetsThemAll) {
  // 2 leaves x 4 single-GPU servers: GPU g's NIC sends its shard (S/n) up once; the switches
  // forward every shard unreduced (a reducing switch would send one shard's bytes up, not its
  // subtree's) and the root multicasts each down, so every NIC receives all n shards: S. Each
  // NIC's receive link then carries S, so busbw <= (n-1)/n x the NIC's goodput (the ring's
  // NIC receives (n-1)/n S: the same bound, in n-1 steps instead of two).
  const auto topo = testing::leaf_spine(2, 2, 4);
  const int n = 8;
  const std::int64_t S = 64 << 20;
  const auto r = run(topo, n, S, algo("sharp"), Kind::kAllGather);
  ASSERT_TRUE(r.result.complete());
  const auto shard = static_cast<std::uint64_t>(S / n);
  const std::uint64_t packets = (shard + 4095) / 4096;
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(S));  // n x S/n, once each
  for (topology::NodeId s = 0; s < 8; ++s) {
    EXPECT_EQ(r.rdma.rdma.nics[topo.port_id(s, 0)].in_network_tx, packets) << s;
    EXPECT_EQ(r.rdma.rdma.nics[topo.port_id(s, 0)].in_network_rx, n * packets) << s;
  }
  const auto trees = plan_sharp(topo, make_communicator(topo, n).value(), algo("sharp")).value();
  ASSERT_EQ(trees.size(), 1u);
  std::uint64_t absorbed = 0;
  for (const SharpTreeNode& x : trees[0].nodes) {
    const SharpSwitchStats& st = r.sharp[x.sw];
    const auto children = static_cast<std::uint64_t>(x.child_ports.size());
    EXPECT_EQ(st.aggregations, 0u) << x.sw;
    EXPECT_EQ(st.down_out_bytes, children * n * shard) << x.sw;
    if (x.parent_port == topology::kNone) {
      EXPECT_EQ(st.up_in_bytes, n * shard);  // the root sees every shard once
      EXPECT_EQ(st.up_out_bytes, 0u);
    } else {
      EXPECT_EQ(st.up_in_bytes, children * shard) << x.sw;  // a leaf: its 4 servers' shards
      EXPECT_EQ(st.up_out_bytes, st.up_in_bytes) << x.sw;   // forwarded, not reduced
      EXPECT_EQ(st.down_in_bytes, n * shard) << x.sw;
    }
    absorbed += st.up_in_bytes - st.up_out_bytes;
  }
  EXPECT_EQ(absorbed, n * shard);  // only the root turns the streams around
  const double f = busbw_factor(Kind::kAllGather, n);
  const double busbw = r.result.algbw_gbs(S) * f;
  EXPECT_LE(busbw, f * kSharpNicGBs);
  EXPECT_GT(busbw, 0.9 * f * kSharpNicGBs);
}

TEST(Sharp, AllGatherWithEightGpusPerServerReceivesTheRailsShardsAndCopiesThemOnNvlink) {
  // 2 servers x 8 GPUs, 800G NICs: tree l gathers rail l's m shards, S/G, into every NIC l,
  // which GPU l copies to its 7 peers ((G-1)/G S over NVLink). busbw <= (n-1)/n /
  // max(1 / (G x NIC), (G-1)/G / NVLink), and the run comes within 15% of it.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml")
          .value();
  const int n = 16;
  const int G = 8;
  const std::int64_t S = 256 << 20;
  const CollectiveParams p = algo("sharp");
  const auto r = run(topo, n, S, p, Kind::kAllGather);
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(S));
  const Communicator comm = make_communicator(topo, n).value();
  const std::uint64_t packets = (static_cast<std::uint64_t>(S / n) + 4095) / 4096;
  for (const Gpu& g : comm.gpus) {
    EXPECT_EQ(r.rdma.rdma.nics[g.nic].in_network_tx, packets);
    EXPECT_EQ(r.rdma.rdma.nics[g.nic].in_network_rx, 2 * packets);  // m = 2 shards of rail l
  }
  const double nic = 800.0 / 8 * 4096 / (4096 + 62 + 20) * 1e9;
  const double nvl = static_cast<double>(p.nvlink_payload().bits_per_second()) / 8;
  const double f = busbw_factor(Kind::kAllGather, n);
  const double bound = f / std::max(1.0 / (G * nic), (G - 1.0) / G / nvl) / 1e9;
  const double busbw = r.result.algbw_gbs(S) * f;
  EXPECT_LE(busbw, bound);
  EXPECT_GT(busbw, 0.85 * bound);
  // The tuner takes it only with coll.sharp.enable.
  CollectiveParams q;
  q.algorithm = "auto";
  EXPECT_EQ(choose(Kind::kAllGather, S, n, G, q, DataRate::gbps(800)).algorithm, "ring");
  q.sharp_enable = 1;
  EXPECT_EQ(choose(Kind::kAllGather, S, n, G, q, DataRate::gbps(800)).algorithm, "sharp");
}

TEST(Sharp, UserErrors) {
  auto topo = testing::leaf_spine(2, 2, 4);
  const Communicator one = make_communicator(topo, 1).value();
  const CollectiveParams defaults;
  EXPECT_FALSE(plan_sharp(topo, one, defaults).ok());  // one server
  // Two GPUs per server on one NIC: two trees over the same switches.
  for (topology::NodeId v = 0; v < 8; ++v) topo.nodes[v].gpus = 2;
  const Communicator comm = make_communicator(topo, 16).value();
  CollectiveParams p;
  EXPECT_TRUE(plan_sharp(topo, comm, p).ok());
  p.sharp_trees = 1;
  const auto many = plan_sharp(topo, comm, p);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("coll.sharp.trees"), std::string::npos);
  const nic::NicParams nic;
  const fabric::FabricParams fp;
  pdes::SerialSync sync;
  CollectiveSpec spec;
  spec.kind = Kind::kBroadcast;
  spec.bytes = 1 << 20;
  p = algo("sharp");
  auto r = run_collective(topo, comm, spec, p, nic, fp, sync, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("sharp is for allreduce, reducescatter, allgather only"),
            std::string::npos)
      << r.error().message;
  spec.kind = Kind::kAllReduce;
  p.protocol = "ll";
  r = run_collective(topo, comm, spec, p, nic, fp, sync, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("simple"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace stepsim::collective
