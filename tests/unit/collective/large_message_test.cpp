// Large AllReduce under the tree, NVLS and NVLS-tree (issue 17): the steady state of a pipeline
// does not depend on the message's size, so busbw at 4 GiB is within 1% of (and not below 99% of)
// busbw at 1 GiB; and the tree's pipeline, whose pieces cross a chain of NVLink hops in every
// server, fills fast enough for a NIC-bound tree to come close to its NIC's bound at 1 GiB.
// A model in which a tree node books all its slots on its GPU's FIFO NVLink timeline puts every
// chain hop behind the backlog of the GPU's other channels (up to channels x 2 x slots pieces),
// so the pipeline's fill costs ~4x as much (issue 17: 335 against 366 GB/s at 1 GiB).
#include <gtest/gtest.h>

#include <string>

#include <cstdio>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

topology::Topology lm_load(const std::string& name) {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + name).value();
}

// Bus bandwidth (B/s) of an AllReduce of `bytes` under `algo` on the first `gpus` GPUs, H100,
// at packet level or (cell) 64 KiB cells.
double busbw(const topology::Topology& topo, const std::string& algo, int gpus, std::int64_t bytes,
             bool cell) {
  CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("h100").value());
  p.algorithm = algo;
  CollectiveSpec spec;
  spec.bytes = bytes;
  fabric::FabricParams fp;
  if (cell) fp.cell = Bytes(64 * 1024);
  const CollectiveRun r = testing::run_collective_once(topo, make_communicator(topo, gpus).value(),
                                                       spec, p, fp, SimTime::s(1));
  EXPECT_TRUE(r.result.complete()) << algo;
  return 2.0 * (gpus - 1) / gpus * static_cast<double>(bytes) /
         (static_cast<double>(r.result.time_ps) * 1e-12);
}

constexpr std::int64_t kLmGiB = std::int64_t{1} << 30;

TEST(LargeMessage, BusBandwidthDoesNotDependOnSize) {
  // NVLink-bound cases (800G rails: the tree's chains, NVLS's and NVLS-tree's switch traffic).
  const auto rail = lm_load("rail-128gpu-800g.yaml");
  struct SizeCase {
    const char* algo;
    int gpus;
  };
  for (const SizeCase& c : {SizeCase{"tree", 32}, SizeCase{"nvls", 8}, SizeCase{"nvls_tree", 32}}) {
    const double one = busbw(rail, c.algo, c.gpus, kLmGiB, true);
    const double four = busbw(rail, c.algo, c.gpus, 4 * kLmGiB, true);
    std::printf("%s on %d GPUs: 1 GiB %.2f, 4 GiB %.2f GB/s\n", c.algo, c.gpus, one / 1e9,
                four / 1e9);
    EXPECT_GE(four, 0.99 * one) << c.algo << ": busbw falls with size";
    // NVLS-tree pays NCCL's fill once (25 us + 2 log2(4) x 20.9 us = 108.6 us), ~2.4% of a
    // 1 GiB run at 477 GB/s (4.4 ms) and ~0.6% of 4 GiB: 1 GiB may sit up to ~2% lower.
    const double fill = std::string(c.algo) == "nvls_tree" ? 1.025 : 1.01;
    EXPECT_LE(four, fill * one) << c.algo << ": 1 GiB is far from the steady state";
  }
}

TEST(LargeMessage, TreePipelineFillsWithOnePiecePerEdgeOnNvlink) {
  // 4 servers of 8 H100 on 8 x 400G rails: the tree is NIC-bound. Its busiest NICs send 2 S / 8
  // (4 halves of a channel pair's data), so busbw <= (n-1)/n x 8 x 50 GB/s (the line rate).
  const auto topo = lm_load("h100-8k-400g.yaml");
  const int n = 32;
  const double bound = (n - 1.0) / n * 8 * 400e9 / 8;
  const double one = busbw(topo, "tree", n, kLmGiB, false);
  const double four = busbw(topo, "tree", n, 4 * kLmGiB, false);
  std::printf("tree on 4 x 8 GPUs, 400G: 1 GiB %.2f, 4 GiB %.2f GB/s (bound %.2f)\n", one / 1e9,
              four / 1e9, bound / 1e9);
  EXPECT_LE(four, bound);
  EXPECT_GE(four, 0.99 * one) << "busbw falls with size";
  // The fill: 2 x (7 NVLink hops + 2 network hops) of one piece each; with a FIFO backlog of
  // every channel's slots on each NVLink hop it cost ~700 us at 1 GiB (87% of the bound).
  EXPECT_GE(one, 0.92 * bound) << "the tree's pipeline fills slowly";
}

}  // namespace
}  // namespace stepsim::collective
