// The machinery every collective algorithm's runtime shares (src/collective/collective_core.hpp):
// channels by size, wire bytes by protocol, NVLink timelines per GPU, connections, a GPU done
// with its last part, and the records gathered into a result.
#include "src/collective/collective_core.hpp"

#include <gtest/gtest.h>

#include "stepsim/pdes/sync.hpp"

namespace stepsim::collective {
namespace {

// Two servers (node ids 3 and 7) of two GPUs, GPU i on NIC port 10 + i.
Communicator two_by_two() {
  Communicator c;
  c.gpus = {Gpu{3, 0, 10}, Gpu{3, 1, 11}, Gpu{7, 0, 12}, Gpu{7, 1, 13}};
  c.gpus_per_server = 2;
  return c;
}

CollectiveSpec allreduce(std::int64_t bytes) {
  CollectiveSpec s;
  s.bytes = bytes;
  return s;
}

TEST(CollectiveCore, ChannelsFollowTheSizeAndWireBytesTheProtocol) {
  const Communicator comm = two_by_two();
  CollectiveParams p;
  p.channels = 8;
  EXPECT_EQ(CollectiveCore(comm, allreduce(0), p).channels_for_size(), 1);
  EXPECT_EQ(CollectiveCore(comm, allreduce(4 * 65536 * 3), p).channels_for_size(), 3);
  EXPECT_EQ(CollectiveCore(comm, allreduce(std::int64_t{1} << 34), p).channels_for_size(), 8);
  EXPECT_EQ(CollectiveCore(comm, allreduce(1), p).wire_bytes(1000), 1000);
  p.protocol = "ll";
  EXPECT_EQ(CollectiveCore(comm, allreduce(1), p).wire_bytes(1000), 2000);
  p.protocol = "ll128";
  EXPECT_EQ(CollectiveCore(comm, allreduce(1), p).wire_bytes(1200), 1280);
}

// `servers` servers of 8 GPUs (node ids 0, 1, ...), GPU i on NIC port i.
Communicator servers_of_eight(int servers) {
  Communicator c;
  for (int i = 0; i < 8 * servers; ++i) {
    c.gpus.push_back(Gpu{static_cast<topology::NodeId>(i / 8), static_cast<std::uint32_t>(i % 8),
                         static_cast<topology::PortId>(i)});
  }
  c.gpus_per_server = 8;
  return c;
}

TEST(CollectiveCore, RingChannelsFollowNcclsPerChannelThreshold) {
  // NCCL drops channels only while a channel would get less than its per-thread threshold
  // times its threads; only ring/LL scales that by the ranks. At 1,024 GPUs a 128 MiB ring
  // keeps all 8 channels (the per-GPU rule ran 2: 128 MiB / (1,024 x 64 KiB)).
  const Communicator comm = servers_of_eight(128);
  CollectiveParams p;
  p.channels = 8;
  const std::int64_t mib = std::int64_t{1} << 20;
  EXPECT_EQ(CollectiveCore(comm, allreduce(128 * mib), p).ring_channels_for_size(), 8);
  EXPECT_EQ(CollectiveCore(comm, allreduce(128 * mib), p).channels_for_size(), 2);
  EXPECT_EQ(CollectiveCore(comm, allreduce(3 * 65536), p).ring_channels_for_size(), 3);
  EXPECT_EQ(CollectiveCore(comm, allreduce(1024), p).ring_channels_for_size(), 1);
  p.protocol = "ll128";
  EXPECT_EQ(CollectiveCore(comm, allreduce(5 * 8192), p).ring_channels_for_size(), 5);
  p.protocol = "ll";  // 8 KiB per rank and channel: 8 MiB per channel at 1,024 GPUs
  EXPECT_EQ(CollectiveCore(comm, allreduce(24 * mib), p).ring_channels_for_size(), 3);
  EXPECT_EQ(CollectiveCore(comm, allreduce(4 * mib), p).ring_channels_for_size(), 1);
}

TEST(CollectiveCore, NvlinkIsOneTimelinePerGpu) {
  const Communicator comm = two_by_two();
  CollectiveParams p;
  CollectiveCore core(comm, allreduce(1 << 20), p);
  const SimTime ser = p.nvlink_payload().serialization_time(Bytes(1 << 20));
  const SimTime first = core.nvlink_hop(0, SimTime::zero(), 1 << 20);
  EXPECT_EQ(first, ser + p.nvlink_latency);
  // A second transfer of the same GPU waits for the first; another GPU's does not.
  EXPECT_EQ(core.nvlink_hop(0, SimTime::zero(), 1 << 20), ser + ser + p.nvlink_latency);
  EXPECT_EQ(core.nvlink_hop(1, SimTime::zero(), 1 << 20), first);
  // Later than the link is free: starts then.
  const SimTime late = SimTime::ms(1);
  EXPECT_EQ(core.nvlink_hop(1, late, 1 << 20), late + ser + p.nvlink_latency);
  pdes::SerialSync sync;
  const CollectiveResult r = core.result(sync);
  EXPECT_EQ(r.nvlink_bytes, 4u << 20);
  EXPECT_EQ(r.network_bytes, 0u);
}

TEST(CollectiveCore, ConnectionsAndPartsAndRecords) {
  const Communicator comm = two_by_two();
  CollectiveParams p;
  p.prio = 5;
  CollectiveCore core(comm, allreduce(1 << 20), p);
  EXPECT_EQ(core.server_rank(3), 0u);
  EXPECT_EQ(core.server_rank(7), 1u);
  EXPECT_EQ(core.add_connection(10, 12), 0u);
  EXPECT_EQ(core.add_connection(11, 13), 1u);
  ASSERT_EQ(core.connections().size(), 2u);
  EXPECT_EQ(core.connections()[1].a, 11u);
  EXPECT_EQ(core.connections()[1].b, 13u);
  EXPECT_EQ(core.connections()[1].prio, 5);
  EXPECT_NE(core.connections()[0].entropy, core.connections()[1].entropy);
  // A GPU is done with the last of its parts, at that part's time.
  core.part_done(2, 100, 3);
  core.part_done(2, 300, 3);
  EXPECT_FALSE(core.gpu_done(2));
  core.part_done(2, 200, 3);
  EXPECT_TRUE(core.gpu_done(2));
  core.set_gpu_done(0, 50);
  core.count_network(1, 4096);
  pdes::SerialSync sync;
  const CollectiveResult r = core.result(sync);
  EXPECT_EQ(r.gpu_done_ps, (std::vector<std::int64_t>{50, -1, 200, -1}));
  EXPECT_EQ(r.time_ps, 200);
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.network_bytes, 4096u);
}

}  // namespace
}  // namespace stepsim::collective
