// RDMA NICs and transport across MPI ranks: identical results to a one-rank run in the same
// process, with DCQCN or HPCC, WRITE, SEND and READ, losses with selective repeat, and a link
// fault, at 1 and 2 threads per rank; and the same with the unordered transport (transport.kind
// uet, NSCC, trimming).
#include <gtest/gtest.h>

#include <string>

#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

class Algorithms : public ::testing::TestWithParam<const char*> {};

TEST_P(Algorithms, MatchesAOneRankRunBitForBit) {
  const auto topo = testing::leaf_spine(4, 3, 4);  // 16 hosts
  std::vector<Connection> conns;
  std::vector<Transfer> transfers;
  const Opcode ops[] = {Opcode::kWrite, Opcode::kSend, Opcode::kRead, Opcode::kWriteImm};
  for (topology::NodeId h = 0; h < 16; ++h) {
    // A shifted permutation, plus an incast into host 0 from every fourth host.
    for (topology::NodeId dst :
         {static_cast<topology::NodeId>((h + 5) % 16), static_cast<topology::NodeId>(0)}) {
      if (dst == h || (dst == 0 && h % 4 != 1)) continue;
      const auto c = static_cast<std::uint32_t>(conns.size());
      conns.push_back(Connection{topo.port_id(h, 0), topo.port_id(dst, 0), 3,
                                 static_cast<std::uint16_t>(49152 + c), 0});
      Transfer t;
      t.connection = c;
      t.message_bytes = 20'000 + 3'000 * (c % 7);
      t.messages = 40;
      t.depth = 8;
      t.start = SimTime::ns(500 * (c % 5));
      t.opcode = ops[c % 4];
      transfers.push_back(t);
    }
  }
  NicParams nic;
  const std::string param = GetParam();
  // "uet": the unordered transport with NSCC, its packets sprayed by ECMP, lossy with trimming.
  const bool uet = param == "uet";
  nic.cc.algorithm = uet ? "nscc" : param;
  nic.kind = uet ? "uet" : "roce";
  nic.retransmission = "selective";
  fabric::FabricParams fp;
  fp.lb.policy = uet ? "ecmp" : "spray";
  if (uet) {
    fp.pfc.enabled = false;
    fp.trimming = true;
    fp.sw.buffer = Bytes(256 * 1024);
  }
  fp.fec = false;
  fp.ber_override = 2e-8;  // a few lost packets
  fp.faults.push_back({fabric::FaultSpec::Kind::kDown, 17, SimTime::us(20), 0});
  fp.faults.push_back({fabric::FaultSpec::Kind::kUp, 17, SimTime::us(60), 0});
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(5);

  BulkApp ref_app(transfers, conns, topo, SimTime::us(10));
  pdes::SerialSync serial;
  const auto ref = run_rdma(topo, conns, nic, fp, &ref_app, serial, opt);
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  const BulkResult ref_bulk = ref_app.result(serial);
  std::uint64_t retx = 0;
  for (const QpStats& q : ref->rdma.endpoints) retx += q.retransmitted;
  EXPECT_GT(retx, 0u);
  for (std::int64_t d : ref_bulk.done_ps) EXPECT_GE(d, 0);  // every transfer completed
  for (int threads : {1, 2}) {
    pdes::MpiSync sync;
    opt.threads = threads;
    BulkApp app(transfers, conns, topo, SimTime::us(10));
    const auto got = run_rdma(topo, conns, nic, fp, &app, sync, opt);
    ASSERT_TRUE(got.ok());
    const BulkResult bulk = app.result(sync);
    EXPECT_EQ(got->stats.digest, ref->stats.digest) << threads << " threads";
    EXPECT_EQ(got->stats.events, ref->stats.events);
    EXPECT_EQ(bulk.done_ps, ref_bulk.done_ps);
    EXPECT_EQ(bulk.samples, ref_bulk.samples);
    for (std::size_t p = 0; p < ref->fabric.ports.size(); ++p) {
      const auto& a = got->fabric.ports[p];
      const auto& b = ref->fabric.ports[p];
      EXPECT_EQ(a.bytes, b.bytes) << "port " << p;
      EXPECT_EQ(a.ecn_marks, b.ecn_marks) << "port " << p;
      EXPECT_EQ(a.pause_sent, b.pause_sent) << "port " << p;
      EXPECT_EQ(a.max_queue, b.max_queue) << "port " << p;
      EXPECT_EQ(a.paused_ps, b.paused_ps) << "port " << p;
      EXPECT_EQ(a.drops_fec, b.drops_fec) << "port " << p;
    }
    for (std::size_t e = 0; e < ref->rdma.endpoints.size(); ++e) {
      const QpStats& a = got->rdma.endpoints[e];
      const QpStats& b = ref->rdma.endpoints[e];
      EXPECT_EQ(a.packets, b.packets) << "endpoint " << e;
      EXPECT_EQ(a.timeouts, b.timeouts) << "endpoint " << e;
      EXPECT_EQ(a.naks_sent, b.naks_sent) << "endpoint " << e;
      EXPECT_EQ(a.out_of_order, b.out_of_order) << "endpoint " << e;
      EXPECT_EQ(a.duplicates, b.duplicates) << "endpoint " << e;
      EXPECT_EQ(a.messages, b.messages) << "endpoint " << e;
      EXPECT_EQ(a.recv_messages, b.recv_messages) << "endpoint " << e;
      EXPECT_EQ(a.acks_sent, b.acks_sent) << "endpoint " << e;
      EXPECT_EQ(a.ecn_received, b.ecn_received) << "endpoint " << e;
      EXPECT_EQ(a.cnps_received, b.cnps_received) << "endpoint " << e;
      EXPECT_EQ(got->rdma.endpoints[e].retransmitted, ref->rdma.endpoints[e].retransmitted);
      EXPECT_EQ(got->rdma.endpoints[e].cnps_sent, ref->rdma.endpoints[e].cnps_sent);
    }
    for (std::size_t n = 0; n < ref->rdma.nics.size(); ++n) {
      EXPECT_EQ(got->rdma.nics[n].ctx_misses, ref->rdma.nics[n].ctx_misses) << "nic " << n;
      EXPECT_EQ(got->rdma.nics[n].mtt_misses, ref->rdma.nics[n].mtt_misses) << "nic " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rdma, Algorithms, ::testing::Values("none", "dcqcn", "hpcc", "uet"));

}  // namespace
}  // namespace stepsim::nic
