// NVLS (src/collective/nvls_algorithm.cpp) where its timers' fields exceed the widths of the
// old bit-packed tags (8 bits of GPU, 6 of channel, 14 of piece; the run was refused above 255
// GPUs or 16,383 pieces per shard): it completes, and each GPU's NVLink carries exactly
// (n+1)/n S (every piece read n times by the switch, the reduced piece stored once).
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/phy/port_rate.hpp"
#include "tests/support/collective_run.hpp"

namespace stepsim::collective {
namespace {

// One server with `gpus` GPUs and one NIC, cabled to a switch (NVLS needs no network).
topology::Topology big_server(std::uint32_t gpus) {
  topology::Topology t;
  t.name = "big-server";
  t.generator = "test";
  t.port_types.push_back(phy::standard_port("400G").value());
  t.add_node(topology::NodeKind::kServer, 0, 1, 0, 0, gpus);
  t.add_node(topology::NodeKind::kSwitch, 1, 1, 0);
  t.connect(0, 0, 1, 0, 0, topology::CableKind::kDac, Length::m(2));
  return t;
}

CollectiveRun run_nvls(const topology::Topology& topo, int gpus, std::int64_t bytes,
                       const CollectiveParams& p) {
  CollectiveSpec spec;
  spec.kind = Kind::kAllReduce;
  spec.bytes = bytes;
  const fabric::FabricParams plain;  // named: a temporary trips GCC 12's maybe-uninitialized
  return testing::run_collective_once(topo, make_communicator(topo, gpus).value(), spec, p, plain);
}

TEST(Nvls, MoreThan255GpusInOneServer) {
  const int n = 300;  // GPU indices above 8 bits
  const auto topo = big_server(n);
  CollectiveParams p;
  p.algorithm = "nvls";
  p.chunk = 4096;
  const std::int64_t S = std::int64_t{n} * 4096 * 2;  // one channel, two pieces per shard
  const CollectiveRun r = run_nvls(topo, n, S, p);
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(n + 1) * S);
  EXPECT_EQ(r.result.network_bytes, 0u);
  for (std::int64_t d : r.result.gpu_done_ps) EXPECT_GT(d, 0);
}

TEST(Nvls, MoreThan16383PiecesPerShard) {
  const int n = 4;
  const auto topo = big_server(n);
  CollectiveParams p;
  p.algorithm = "nvls";
  p.channels = 1;
  p.chunk = 256;
  const std::int64_t pieces = 16'400;  // piece indices above 14 bits
  const std::int64_t S = n * pieces * p.chunk;
  const CollectiveRun r = run_nvls(topo, n, S, p);
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(n + 1) * S);
  // The shard's pieces go one after the other on each GPU's NVLink: at least (n+1)/n S of
  // serialization at the NVLS rate.
  const double rate =
      static_cast<double>(p.nvlink_payload().bits_per_second()) / 8 * p.nvls_efficiency;
  EXPECT_GE(static_cast<double>(r.result.time_ps) * 1e-12,
            static_cast<double>(n + 1) / n * static_cast<double>(S) / rate);
}

}  // namespace
}  // namespace stepsim::collective
