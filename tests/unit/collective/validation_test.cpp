// Published nccl-tests measurements (../shared/validation/nccl.md), with the tolerance stated
// there. Fitted: gpu.nvlink_efficiency of H100 on N1 and of A100 on N4 (gpu_spec.cpp); these two
// check that the fit holds across message sizes. Predictions (nothing fitted on them): N2 (NVLS
// on H100, with NCCL's own NVLS efficiency constant) and N5 (DGX A100 servers over 200G rails).
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

double busbw(const std::string& topology, int gpus, const std::string& gpu, const char* algo,
             std::int64_t bytes) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + topology).value();
  const Communicator comm = make_communicator(topo, gpus).value();
  CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset(gpu).value());
  p.algorithm = algo;
  CollectiveSpec spec;
  spec.kind = Kind::kAllReduce;
  spec.bytes = bytes;
  const fabric::FabricParams fp;
  const auto r = testing::run_collective_once(topo, comm, spec, p, fp, SimTime::s(10));
  EXPECT_TRUE(r.result.complete());
  return r.result.algbw_gbs(bytes) * busbw_factor(Kind::kAllReduce, gpus);
}

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

TEST(NcclValidation, N1_H100RingOverNvlink) {
  // 8x H100 SXM, ring forced, 2-8 GB: busbw 365-370 GB/s, 5%.
  for (std::int64_t S : {2 * kGiB, 8 * kGiB}) {
    const double b = busbw("toy-2server.yaml", 8, "h100", "ring", S);
    EXPECT_GE(b, 365 * 0.95) << S;
    EXPECT_LE(b, 370 * 1.05) << S;
  }
}

TEST(NcclValidation, N2_H100NvlsIsAPrediction) {
  // Same server, NVLS, 8 GB: busbw about 480 GB/s, 5%.
  const double b = busbw("toy-2server.yaml", 8, "h100", "nvls", 8 * kGiB);
  EXPECT_NEAR(b, 480, 0.05 * 480);
}

TEST(NcclValidation, N4_A100RingOverNvlink) {
  // 8x A100 SXM (NVLink 3), large messages: busbw 232 GB/s, 5%.
  const double b = busbw("toy-2server.yaml", 8, "a100", "ring", 4 * kGiB);
  EXPECT_NEAR(b, 232, 0.05 * 232);
}

TEST(NcclValidation, N5_DgxA100ServersOver200GRailsIsAPrediction) {
  // 4 DGX A100 (8x 200G NICs each, rail-optimized), ring, large messages: busbw 192 GB/s, 5%.
  // The network is the bottleneck: 8 NICs x 200G RDMA goodput per server.
  const double b = busbw("dgx-a100-4server-200g.yaml", 32, "a100", "ring", kGiB);
  EXPECT_NEAR(b, 192, 0.05 * 192);
}

TEST(NcclValidation, NvlinkEfficiencyIsWhatTheGpuPresetSays) {
  // A wrong preset (A100 with H100's NVLink) must miss N4: the test above can fail.
  const double h = busbw("toy-2server.yaml", 8, "h100", "ring", kGiB);
  EXPECT_GT(h, 232 * 1.05);
}

}  // namespace
}  // namespace stepsim::collective
