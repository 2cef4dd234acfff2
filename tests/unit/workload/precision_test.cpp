// model.precision mxfp8 / nvfp4 and the Blackwell presets: the GEMMs run at the precision's peak
// x the one low-precision efficiency, the memory bound reads the block-scaled operands, MFU is
// over that peak, and a GPU without the precision is refused. nic.model against the topology.
#include <gtest/gtest.h>

#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/nic/nic_presets.hpp"
#include "stepsim/topology/topology_spec.hpp"
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {
namespace {

Scenario flat(const std::string& gpu) {
  Scenario s;
  s.model.layers = 4;
  s.model.hidden = 4096;
  s.model.heads = 32;
  s.model.ffn = 16384;
  s.model.vocab = 32000;
  s.model.seq_len = 4096;
  s.par.tp = 1;
  s.par.micro_batch = 1;
  s.gpu = gpu::gpu_preset(gpu).value();
  s.compute.gemm_model = "flat";
  s.compute.attention = "formula";
  return s;
}

TEST(Precision, BlackwellPresetsFromTheDataSheets) {
  // Per GPU, dense: GB300 NVL72 FP4 1,080 PFLOPS / 72 = 15 PFLOPS, FP8 720 sparse / 72 / 2 = 5,
  // BF16 360 sparse / 72 / 2 = 2.5; GB200 FP4 720 / 72 = 10; HGX B300 FP4 108 / 8 = 13.5.
  const gpu::GpuSpec gb300 = gpu::gpu_preset("gb300").value();
  const gpu::GpuSpec gb200 = gpu::gpu_preset("gb200").value();
  const gpu::GpuSpec b300 = gpu::gpu_preset("b300").value();
  EXPECT_DOUBLE_EQ(gpu::peak_flops(gb300, "nvfp4"), 1080e15 / 72);
  EXPECT_DOUBLE_EQ(gpu::peak_flops(gb300, "mxfp8"), 720e15 / 72 / 2);
  EXPECT_DOUBLE_EQ(gpu::peak_flops(gb300, "bf16"), 360e15 / 72 / 2);
  EXPECT_DOUBLE_EQ(gpu::peak_flops(gb200, "nvfp4"), 720e15 / 72);
  EXPECT_DOUBLE_EQ(gpu::peak_flops(b300, "nvfp4"), 108e15 / 8);
  EXPECT_EQ(gb300.hbm_bytes, 288 * (std::int64_t{1} << 30));  // binary, as the HBM stacks are built
  EXPECT_EQ(gb200.nvlink_domain, 72u);
  EXPECT_EQ(gb300.sms, 160);
  // NVLink 5: 1.8 TB/s per GPU, 900 GB/s per direction.
  EXPECT_EQ(gb200.nvlink, DataRate::gbps(7'200));
  EXPECT_EQ(gpu::peak_flops(gpu::gpu_preset("h100").value(), "nvfp4"), 0);
}

TEST(Precision, LowPrecisionGemmsRunAtTheirPeak) {
  Scenario s = flat("gb300");
  const double gemm_flops = 2 * 4096.0 * (4.0 * 4096 * 4096 + 2.0 * 4096 * 16384);
  s.model.precision = "mxfp8";
  const double mx = layer_costs(s).fwd_s;
  // The same tensor-core rate; FP8 current scaling adds its casts (block-scaled MXFP8 does not).
  s.model.precision = "fp8";
  EXPECT_GT(layer_costs(s).fwd_s, mx);
  s.model.precision = "nvfp4";
  const double fp4 = layer_costs(s).fwd_s;
  const double eff = s.gpu.fp8_gemm_efficiency;
  EXPECT_NEAR(mx - fp4, gemm_flops / (5e15 * eff) - gemm_flops / (15e15 * eff), 1e-12);
  // The memory bound of a skinny GEMM reads the scaled operands: 16 tokens x 4096 x 16384.
  s.compute.gemm_model = "tiles";
  const double nvfp4_s = gemm_seconds(s, 16, 16384, 4096, true);
  const double bytes = (0.5 + 1.0 / 16) * (16.0 * 4096 + 4096.0 * 16384) + 2 * 16.0 * 16384;
  EXPECT_NEAR(nvfp4_s, bytes / (s.gpu.hbm_bandwidth * s.compute.memory_efficiency), 1e-12);
}

topology::Topology racks(const std::string& port) {
  topology::TopologySpec spec;
  spec.kind = "rail_optimized";
  spec.port = port;
  spec.params = {
      {"servers", "18"}, {"gpus_per_server", "4"}, {"nvlink_domain", "72"}, {"tiers", "2"}};
  return topology::generate_topology(spec).value();
}

TEST(Precision, AGpuWithoutThePrecisionAndAMismatchedNicAreRefused) {
  const topology::Topology topo = racks("800G");
  Scenario s = flat("h100");
  s.model.precision = "nvfp4";
  s.par.dp = 8;
  s.par.global_batch = 8;
  const auto bad = validate(s, topo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("model.precision nvfp4: h100 has no nvfp4 peak (allowed on "
                                     "it: bf16, fp8)"),
            std::string::npos)
      << bad.error().message;
  EXPECT_TRUE(nic::check_nic_model("cx8", topo).ok());
  EXPECT_TRUE(nic::check_nic_model("", topo).ok());
  const auto nic = nic::check_nic_model("cx7", topo);
  ASSERT_FALSE(nic.ok());
  EXPECT_NE(nic.error().message.find("nic.model cx7: a 400G NIC, but the topology's server links "
                                     "are 800G"),
            std::string::npos);
  EXPECT_TRUE(nic::check_nic_model("nic-1.6t", racks("1.6T")).ok());
  EXPECT_EQ(nic::nic_preset("cx8").value().pcie_gen, 6);
}

}  // namespace
}  // namespace stepsim::workload
