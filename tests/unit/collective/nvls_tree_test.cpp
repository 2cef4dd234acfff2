// NVLS beyond one server (issue 17): NVLS-tree (nvls_tree_algorithm.cpp), NVLS with SHARP and
// SHARP ReduceScatter (sharp_algorithm.cpp), NCCL's eligibility rules and the tuner's picks.
// Bytes are NCCL's: under NVLS-tree each GPU's NVLink carries S (its copy of every piece, read by
// the switch) plus S / G (the pieces it multicasts as a head), and the double binary tree carries
// every head's share once up and once down each of its m - 1 edges: 2 (m - 1) S on the network
// in all, at most 2 S / G per NIC (inner node of one tree, leaf of the other).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

topology::Topology load(const std::string& name) {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + name).value();
}

CollectiveParams h100(const std::string& algo) {
  CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("h100").value());
  p.algorithm = algo;
  return p;
}

CollectiveRun run(const topology::Topology& topo, int gpus, Kind kind, std::int64_t bytes,
                  const CollectiveParams& p) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  const fabric::FabricParams fp;
  return testing::run_collective_once(topo, make_communicator(topo, gpus).value(), spec, p, fp,
                                      SimTime::s(10));
}

// The largest number of bytes any NIC sent (by the connections' sending side).
std::uint64_t max_nic_sent(const CollectiveRun& r) {
  std::map<topology::PortId, std::uint64_t> sent;
  for (std::size_t e = 0; e < r.result.flows.size(); ++e) {
    const nic::Connection& c = r.connections[e / 2];
    sent[e % 2 == 0 ? c.a : c.b] += r.result.flows[e].bytes;
  }
  std::uint64_t most = 0;
  for (const auto& [port, b] : sent) most = std::max(most, b);
  return most;
}

CollectiveShape shape(Kind k, int gpus, std::uint32_t per) {
  return CollectiveShape::of(k, 1 << 20, gpus, per);
}

TEST(NvlsTree, SupportFollowsNccl) {
  const CollectiveParams p = h100("nvls_tree");
  EXPECT_TRUE(check_algorithm("nvls_tree", shape(Kind::kAllReduce, 16, 8), p).ok());
  // NCCL disables NVLS-tree on one node (tuning.cc).
  const auto one = check_algorithm("nvls_tree", shape(Kind::kAllReduce, 8, 8), p);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message.find("needs whole servers, at least two"), std::string::npos);
  // No NVLS at two GPUs per NVLink domain (transport/nvls.cc: gpuCount <= 2).
  for (const char* a : {"nvls", "nvls_tree", "nvls_sharp"}) {
    const int gpus = std::string(a) == "nvls" ? 2 : 4;
    const auto two = check_algorithm(a, shape(Kind::kAllReduce, gpus, 2), p);
    ASSERT_FALSE(two.ok()) << a;
    EXPECT_NE(two.error().message.find("needs at least 3 GPUs per server"), std::string::npos)
        << two.error().message;
    EXPECT_TRUE(
        check_algorithm(a, shape(Kind::kAllReduce, std::string(a) == "nvls" ? 3 : 6, 3), p).ok())
        << a;
  }
  // In a step, NVLS on a 2-GPU TP group falls back to the ring instead.
  CollectiveParams q = p;
  q.algorithm = "nvls";
  EXPECT_EQ(applicable_params(q, shape(Kind::kAllReduce, 2, 2)).algorithm, "ring");
  EXPECT_EQ(applicable_params(q, shape(Kind::kAllReduce, 4, 4)).algorithm, "nvls");
  // A100 has no NVLS; NVLS algorithms run Simple only (tuning.cc).
  CollectiveParams a100;
  a100.apply_gpu(gpu::gpu_preset("a100").value());
  EXPECT_FALSE(check_algorithm("nvls_tree", shape(Kind::kAllReduce, 16, 8), a100).ok());
  const CollectiveAlgorithm& nt = *find_algorithm("nvls_tree", Kind::kAllReduce);
  EXPECT_FALSE(check_protocol(nt, "ll").ok());
  EXPECT_FALSE(check_protocol(*find_algorithm("nvls", Kind::kAllReduce), "ll128").ok());
  // SHARP runs ReduceScatter and AllGather too (the distributed optimizer's); NVLS+SHARP not
  // AllGather.
  EXPECT_NE(find_algorithm("sharp", Kind::kReduceScatter), nullptr);
  EXPECT_NE(find_algorithm("nvls_sharp", Kind::kReduceScatter), nullptr);
  EXPECT_NE(find_algorithm("sharp", Kind::kAllGather), nullptr);  // multicast (sharp_test.cpp)
  EXPECT_EQ(find_algorithm("nvls_sharp", Kind::kAllGather), nullptr);
  EXPECT_EQ(find_algorithm("nvls_tree", Kind::kReduceScatter), nullptr);
}

TEST(NvlsTree, MovesWhatNcclsNvlsTreeMovesPerGpu) {
  // 4 servers x 8 H100 on 800G rails; one channel pair, 8 heads, 4 pieces per head's share.
  const auto topo = load("rail-128gpu-800g.yaml");
  CollectiveParams p = h100("nvls_tree");
  p.channels = 1;
  const int G = 8;
  const int m = 4;
  const std::int64_t S = 2 * G * 4 * p.chunk;  // 32 MiB
  const CollectiveRun r = run(topo, m * G, Kind::kAllReduce, S, p);
  ASSERT_TRUE(r.result.complete());
  // NVLink: S + S/G per GPU.
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(m * G * S + m * S));
  // Network: every share once up and once down each of the m - 1 tree edges.
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(2 * (m - 1) * S));
  // Per NIC at most 2 S / G (inner node in one tree, leaf in the other), and some NIC sends that.
  EXPECT_EQ(max_nic_sent(r), static_cast<std::uint64_t>(2 * S / G));
  // On 8 servers too: NCCL's trees (tree 1 mirrors tree 0) make every inner node a leaf of the
  // other tree; an in-order tree shifted by one server would put 5 half shares on one NIC.
  const CollectiveRun r8 = run(topo, 8 * G, Kind::kAllReduce, S, p);
  ASSERT_TRUE(r8.result.complete());
  EXPECT_EQ(r8.result.network_bytes, static_cast<std::uint64_t>(2 * 7 * S));
  EXPECT_EQ(max_nic_sent(r8), static_cast<std::uint64_t>(2 * S / G));
  // A tree over the same servers carries the same network bytes but chains the server's GPUs
  // over NVLink: 2 (G-1) S per server where NVLS-tree moves (G+1) S.
  const CollectiveRun t = run(topo, m * G, Kind::kAllReduce, S, h100("tree"));
  EXPECT_EQ(t.result.network_bytes, r.result.network_bytes);
  EXPECT_GT(t.result.nvlink_bytes, r.result.nvlink_bytes);
}

TEST(NvlsTree, BusBandwidthIsTheSlowerOfNvlinkAndTheHeadsNic) {
  // Large messages: time -> max((G+1)/G S / NVLS rate, 2 S / G / NIC goodput) beyond two
  // servers, so busbw -> 2(n-1)/n over that; the ring stays at NVLink's copy rate.
  const auto topo = load("rail-128gpu-800g.yaml");
  const CollectiveParams p = h100("nvls_tree");
  const int G = 8;
  const int n = 32;
  const std::int64_t S = 256 * kMiB;
  const CollectiveRun r = run(topo, n, Kind::kAllReduce, S, p);
  ASSERT_TRUE(r.result.complete());
  const double busbw = r.result.algbw_gbs(S) * busbw_factor(Kind::kAllReduce, n);
  const double nvls =
      static_cast<double>(p.nvlink_payload().bits_per_second()) / 8e9 * p.nvls_efficiency;
  const double nic = static_cast<double>(
                         fabric::rdma_goodput(DataRate::gbps(800), Bytes(4096)).bits_per_second()) /
                     8e9;
  // NVLS across servers at no more than one server's NVLS busbw: rate x (G-1)/G x n/(n-1).
  const double nvls_m = nvls * (G - 1.0) / G * n / (n - 1.0);
  const double bound = 2.0 * (n - 1) / n / std::max((G + 1.0) / G / nvls_m, 2.0 / G / nic);
  EXPECT_LE(busbw, bound * 1.001);
  EXPECT_GE(busbw, bound * 0.85);
  const CollectiveRun ring = run(topo, n, Kind::kAllReduce, S, h100("ring"));
  EXPECT_GT(busbw, 1.2 * ring.result.algbw_gbs(S) * busbw_factor(Kind::kAllReduce, n));
}

TEST(NvlsTree, MediumMessagesPayNcclsNvlsTreeLatency) {
  // A piece crosses one NVLS round inside its server (tuning.cc: 25 us for NVLS-tree, Simple) and
  // 2 log2(m) network hops of 20.9 us each, so the run takes at least that fill on top of the
  // bytes at the large-message rate: busbw(S) <= busbw_large x T / (T + L), T = 2(n-1)/n S /
  // busbw_large, L = 25 + 2 log2(m) x 20.9 us (108.6 us on 4 servers). Before (the ring's 3.4 and
  // 14 us per hop, 512 KiB chunks), 64 MiB ran at 283 GB/s against a bound of ~275.
  const auto topo = load("h100-8k-400g.yaml");
  const CollectiveParams p = h100("nvls_tree");
  const int n = 32;
  const std::int64_t big = 1024 * kMiB;
  const std::int64_t mid = 64 * kMiB;
  const CollectiveRun rl = run(topo, n, Kind::kAllReduce, big, p);
  const CollectiveRun rm = run(topo, n, Kind::kAllReduce, mid, p);
  ASSERT_TRUE(rl.result.complete());
  ASSERT_TRUE(rm.result.complete());
  const double f = busbw_factor(Kind::kAllReduce, n);
  const double large = rl.result.algbw_gbs(big) * f * 1e9;
  const double medium = rm.result.algbw_gbs(mid) * f * 1e9;
  const double T = f * static_cast<double>(mid) / large;
  const double L = 25e-6 + 2 * 2 * 20.9e-6;
  EXPECT_LE(medium, large * T / (T + L) * 1.02);
  EXPECT_GE(medium, large * T / (T + L) * 0.85);  // a latency, not a loss of bandwidth
}

TEST(NvlsSharp, NvlsInsideSharpBetween) {
  // NVLS+SHARP AllReduce: NVLink as NVLS-tree's ((G+1)/G S per GPU), each NIC sends S / G once.
  const auto topo = load("rail-128gpu-800g.yaml");
  const int G = 8;
  const int m = 2;
  const std::int64_t S = 256 * kMiB;  // bandwidth-bound (at 16 MiB the NVLS start-up costs more)
  const CollectiveRun r = run(topo, m * G, Kind::kAllReduce, S, h100("nvls_sharp"));
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(m * G * S + m * S));
  EXPECT_EQ(r.result.network_bytes, static_cast<std::uint64_t>(m * S));
  // The ring-based SHARP moves 2(G-1)/G S per GPU over NVLink.
  const CollectiveRun s = run(topo, m * G, Kind::kAllReduce, S, h100("sharp"));
  EXPECT_EQ(s.result.nvlink_bytes, static_cast<std::uint64_t>(m * 2 * (G - 1) * S));
  EXPECT_LT(r.result.time_ps, s.result.time_ps);
}

TEST(NvlsSharp, NeverAboveOneServersNvlsBusBandwidth) {
  // NCCL's tuning.cc prices NVLS on several nodes from the same per-channel NVLink SHARP rate as
  // on one (busBw = nChannels x min(intra, inter)), so NVLS with SHARP between servers does not
  // exceed what NVLS reaches inside one server at the same size and GPUs per server; it reaches
  // it where NVLink binds (800G rails: each NIC sends only S / G). Before, busbw rose with the
  // server count towards 2G/(G+1) x rate: 519 / 545 GB/s on 2 / 8 servers against 486.
  const auto topo = load("rail-128gpu-800g.yaml");
  const int G = 8;
  const std::int64_t S = 256 * kMiB;
  const CollectiveRun one = run(topo, G, Kind::kAllReduce, S, h100("nvls"));
  ASSERT_TRUE(one.result.complete());
  const double nvls = one.result.algbw_gbs(S) * busbw_factor(Kind::kAllReduce, G);
  for (const int m : {2, 8}) {
    const CollectiveRun r = run(topo, m * G, Kind::kAllReduce, S, h100("nvls_sharp"));
    ASSERT_TRUE(r.result.complete());
    const double busbw = r.result.algbw_gbs(S) * busbw_factor(Kind::kAllReduce, m * G);
    EXPECT_LE(busbw, nvls * 1.005) << m << " servers";
    EXPECT_GE(busbw, nvls * 0.95) << m << " servers";
  }
  // The tuner prices it the same way: no higher busbw than one server's NVLS.
  CollectiveParams p = h100("auto");
  const TunerRates rates{.nvlink = static_cast<double>(p.nvlink_payload().bits_per_second()) / 8,
                         .nic = 97.9e9,
                         .nvls_efficiency = p.nvls_efficiency};
  const double one_bw = find_algorithm("nvls", Kind::kAllReduce)
                            ->tuner_cost(CollectiveShape::of(Kind::kAllReduce, S, G, G), rates)
                            .bandwidth;
  const double many_bw = find_algorithm("nvls_sharp", Kind::kAllReduce)
                             ->tuner_cost(CollectiveShape::of(Kind::kAllReduce, S, 8 * G, G), rates)
                             .bandwidth;
  EXPECT_LE(many_bw, one_bw * 1.0001);
}

TEST(NvlsSharp, SharpReduceScatterSkipsTheAllGather) {
  // ReduceScatter through SHARP: the server's reduce-scatter ((G-1)/G S per GPU over NVLink),
  // then S / G per NIC up the tree; each GPU keeps its part, so no all-gather.
  const auto topo = load("rail-128gpu-800g.yaml");
  const int G = 8;
  const int m = 2;
  const std::int64_t S = 16 * kMiB;
  const CollectiveRun rs = run(topo, m * G, Kind::kReduceScatter, S, h100("sharp"));
  ASSERT_TRUE(rs.result.complete());
  EXPECT_EQ(rs.result.nvlink_bytes, static_cast<std::uint64_t>(m * (G - 1) * S));
  EXPECT_EQ(rs.result.network_bytes, static_cast<std::uint64_t>(m * S));
  const CollectiveRun ar = run(topo, m * G, Kind::kAllReduce, S, h100("sharp"));
  EXPECT_LT(rs.result.time_ps, ar.result.time_ps);
  const CollectiveRun nrs = run(topo, m * G, Kind::kReduceScatter, S, h100("nvls_sharp"));
  ASSERT_TRUE(nrs.result.complete());
  EXPECT_EQ(nrs.result.nvlink_bytes, static_cast<std::uint64_t>(m * G * S));
}

TEST(NvlsTuner, PicksNvlsWhereNcclDoes) {
  const DataRate nic = DataRate::gbps(780);
  CollectiveParams p = h100("auto");
  p.protocol = "auto";
  const std::int64_t big = 256 * kMiB;
  // One server of 8 H100: NVLS for large messages, not for tiny ones (LL's latency).
  EXPECT_EQ(choose(Kind::kAllReduce, big, 8, 8, p, nic).algorithm, "nvls");
  EXPECT_NE(choose(Kind::kAllReduce, 64, 8, 8, p, nic).algorithm, "nvls");
  // Several servers: NVLS-tree; with SHARP enabled, NVLS+SHARP (each NIC sends S/G, not 2 S/G).
  EXPECT_EQ(choose(Kind::kAllReduce, big, 32, 8, p, nic).algorithm, "nvls_tree");
  CollectiveParams q = p;
  q.sharp_enable = 1;
  EXPECT_EQ(choose(Kind::kAllReduce, big, 32, 8, q, nic).algorithm, "nvls_sharp");
  // ReduceScatter: an NVLS reduce moves S per GPU over NVLink at the NVLS rate, a ring-based one
  // (G-1)/G S at the copy rate, so SHARP with the ring inside wins; without SHARP, the ring.
  EXPECT_EQ(choose(Kind::kReduceScatter, big, 32, 8, q, nic).algorithm, "sharp");
  EXPECT_EQ(choose(Kind::kReduceScatter, big, 32, 8, p, nic).algorithm, "ring");
  // No NVLS at 2 or 3 GPUs per server, nor on A100; SHARP alone still applies there.
  for (std::uint32_t per : {2u, 3u}) {
    const Choice c = choose(Kind::kAllReduce, big, static_cast<int>(4 * per), per, q, nic);
    EXPECT_EQ(c.algorithm.find("nvls"), std::string::npos) << per << " " << c.algorithm;
    EXPECT_EQ(choose(Kind::kAllReduce, big, static_cast<int>(per), per, p, nic).algorithm, "ring");
  }
  CollectiveParams a = q;
  a.apply_gpu(gpu::gpu_preset("a100").value());
  EXPECT_EQ(choose(Kind::kAllReduce, big, 32, 8, a, nic).algorithm, "sharp");
  EXPECT_EQ(choose(Kind::kAllReduce, big, 8, 8, a, nic).algorithm, "ring");
  // The choice runs: what the tuner picks for 4 servers is NVLS-tree, and it beats the ring.
  const auto topo = load("rail-128gpu-800g.yaml");
  const CollectiveRun r = run(topo, 32, Kind::kAllReduce, 64 * kMiB, p);
  EXPECT_EQ(r.choice.algorithm, "nvls_tree");
}

}  // namespace
}  // namespace stepsim::collective
