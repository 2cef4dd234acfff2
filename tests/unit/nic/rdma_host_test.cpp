// RDMA NICs and the RC transport on small hand-built fabrics, one rank.
#include "stepsim/nic/rdma_host.hpp"

#include <gtest/gtest.h>

#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/perftest.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

using testing::leaf_spine;

struct Outcome {
  RdmaRun run;
  PerftestResult perf;
};

// The default fabric, one named object: a `= {}` temporary per call makes GCC 12 warn that its
// strings "may be used uninitialized" where a unity build inlines more (a false positive).
const fabric::FabricParams& default_fabric() {
  static const fabric::FabricParams fp;
  return fp;
}

Outcome perftest(const topology::Topology& topo, PerftestSpec spec, const NicParams& nic,
                 const fabric::FabricParams& fp = default_fabric(), SimTime end = SimTime::ms(50)) {
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = end;
  Perftest app(spec, topo);
  auto r = run_rdma(topo, app.connections(), nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  Outcome o{std::move(r).value(), {}};
  o.perf = app.result(sync);
  return o;
}

// A perftest between the two hosts of `topo` (host 0's NIC to host 1's).
PerftestSpec between_hosts(const topology::Topology& topo, PerftestKind kind, std::int64_t bytes,
                           int iterations) {
  PerftestSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  spec.iterations = iterations;
  spec.a = topo.port_id(0, 0);
  spec.b = topo.port_id(1, 0);
  return spec;
}

NicParams no_cc() {
  NicParams p;
  p.cc.algorithm = "none";
  return p;
}

TEST(RdmaHost, WriteLatencySplitsIntoTheStagesOfTheBreakdown) {
  // DOMAIN.md section 2: a 256 B WRITE costs post 50 ns, doorbell 150, WQE fetch 200, packet
  // generation 100, payload DMA 300, remote processing 50, CQE write 250: ~1.1 us plus the wire.
  // The model adds each stage's occupancy at 322.26 MHz and the PCIe transfer of 256 B.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteLat, 256, 20);
  const NicParams nic = no_cc();
  const auto o = perftest(topo, spec, nic);
  ASSERT_EQ(o.perf.samples_ps.size(), 20u);
  const MessageTrace& s = o.run.rdma.traces[endpoint_of(0, 0)];  // A's last message
  const MessageTrace& r = o.run.rdma.traces[endpoint_of(0, 1)];  // ... as B received it
  const PcieParams pcie = size_for_port(nic.pcie, DataRate::gbps(1600));
  EXPECT_EQ(s.post, SimTime::ns(50).picoseconds());
  EXPECT_EQ(s.doorbell, (SimTime::ns(150) + nic.cycles(2)).picoseconds());
  EXPECT_EQ(s.ctx_lookup, nic.cycles(4).picoseconds());  // a hit (the first message missed)
  EXPECT_EQ(s.wqe_fetch, (SimTime::ns(200) + nic.cycles(6)).picoseconds());
  EXPECT_EQ(s.pkt_gen, SimTime::ns(100).picoseconds());
  EXPECT_EQ(s.dma, (SimTime::ns(300) + transfer_time(pcie, Bytes(256))).picoseconds());
  EXPECT_EQ(s.mac, nic.cycles(3).picoseconds());
  // The wire: host -> leaf (cut-through) -> host, store-and-forward into the NIC.
  const DataRate rate = DataRate::gbps(1600);
  const SimTime ser = rate.serialization_time(Bytes(256 + 62 + 20));
  const SimTime hdr = rate.serialization_time(Bytes(64));
  const SimTime link = topo.links[0].latency;
  const fabric::FabricParams fp;
  EXPECT_EQ(r.arrived_ps - s.sent_ps, (hdr + fp.sw.latency + link * 2 + ser).picoseconds());
  EXPECT_EQ(r.placed_ps - r.arrived_ps,
            (SimTime::ns(50) + transfer_time(pcie, Bytes(256))).picoseconds());
  EXPECT_EQ(r.cqe_ps - r.placed_ps, SimTime::ns(250).picoseconds());
  const std::int64_t total = r.cqe_ps - s.posted_ps;
  const std::int64_t wire = r.arrived_ps - s.sent_ps;
  EXPECT_EQ(total, s.post + s.doorbell + s.ctx_lookup + s.wqe_fetch + s.pkt_gen + s.dma + s.mac +
                       wire + (r.cqe_ps - r.arrived_ps));
  EXPECT_NEAR(static_cast<double>(total - wire) * 1e-6, 1.1, 0.1);  // "about 1.1 us + wire"
  // perftest's number is half the round trip, which is the one-way latency (symmetric pong);
  // only the first round is slower (context and translation misses).
  EXPECT_EQ(o.perf.samples_ps.front(), total);
  EXPECT_EQ(o.perf.samples_ps[18], total);
  EXPECT_GT(o.perf.samples_ps.back(), total);
}

// Payload share of a frame on the wire: 4 KiB packets carry 62 B of headers and 20 B of
// preamble and gap.
double effective_gbps(double line_gbps, std::int64_t payload) {
  return line_gbps * static_cast<double>(payload) / static_cast<double>(payload + 62 + 20);
}

TEST(RdmaHost, OneQpOfOneMegabyteWritesReachesTheEffectivePortRateAt1600G) {
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteBw, 1 << 20, 100);
  const auto o = perftest(topo, spec, no_cc());
  EXPECT_EQ(o.perf.messages, 100);
  EXPECT_GE(o.perf.gbps(), 0.97 * effective_gbps(1600, 4096));
  EXPECT_LE(o.perf.gbps(), effective_gbps(1600, 4096));
}

TEST(RdmaHost, SixtyFourQpsOfFourKilobytesReachLineRate) {
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteBw, 4096, 300);
  spec.qps = 64;
  const auto o = perftest(topo, spec, no_cc());
  EXPECT_EQ(o.perf.messages, 64 * 300);
  EXPECT_GE(o.perf.gbps(), 0.97 * effective_gbps(1600, 4096));
}

TEST(RdmaHost, SmallMessagesAreLimitedByThePipelinesMessageRate) {
  // 64 B WRITEs: the wire could carry 1.6T / (146 B x 8) = 1.37 G packets/s. Many QPs are
  // limited by the slowest per-message stage (WQE fetch, 6 cycles at 322.26 MHz: 53.7 M/s); one
  // QP by its in-order WQE processing (context lookup 4 + WQE fetch 6 cycles + packet generation
  // 100 ns: 7.6 M/s).
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  const NicParams nic = no_cc();
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteBw, 64, 400);
  spec.qps = 64;
  const double stage_rate = 1.0 / nic.cycles(nic.wqe_fetch.cycles).seconds() / 1e6;
  EXPECT_NEAR(perftest(topo, spec, nic).perf.mpps(), stage_rate, 0.03 * stage_rate);
  spec.qps = 1;
  spec.iterations = 3000;
  const SimTime gap =
      nic.cycles(nic.ctx_lookup.cycles) + nic.cycles(nic.wqe_fetch.cycles) + nic.pkt_gen.latency;
  const double qp_rate = 1.0 / gap.seconds() / 1e6;
  EXPECT_NEAR(perftest(topo, spec, nic).perf.mpps(), qp_rate, 0.03 * qp_rate);
  // ... which DOMAIN.md section 7 measured as 7.7 Mpps (15.8 Gb/s at 256 B) on ConnectX-7.
  EXPECT_NEAR(qp_rate, 7.7, 0.2);
}

TEST(RdmaHost, GpuDirectAvoidsTheBounceCopyAndTheRootComplex) {
  // One-packet WRITEs (4 KiB): GPUDirect through a PCIe switch reads as fast as host memory;
  // across the root complex the payload read takes 1 us instead of 300 ns; without GPUDirect the
  // payload is copied GPU -> host at the sender and host -> GPU at the receiver.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteLat, 4096, 10);
  NicParams nic = no_cc();
  const auto latency = [&](MemoryKind k) {
    nic.memory = k;
    return perftest(topo, spec, nic).perf.samples_ps.front();
  };
  const std::int64_t host = latency(MemoryKind::kHost);
  const PcieParams pcie = size_for_port(nic.pcie, DataRate::gbps(1600));
  EXPECT_EQ(latency(MemoryKind::kGpuDirect), host);
  EXPECT_EQ(latency(MemoryKind::kGpuRootComplex) - host,
            (pcie.root_complex_read_latency - pcie.dma_read_latency).picoseconds());
  EXPECT_EQ(latency(MemoryKind::kGpuBounce) - host,
            2 * (nic.bounce_copy_latency + transfer_time(pcie, Bytes(4096))).picoseconds());
}

TEST(RdmaHost, APcieDegradeSlowsTheDmaToTheNewLinksBandwidth) {
  // 1 MiB WRITEs at 1.6T on Gen6 x32 (chosen for the port); at 400 us the link retrains at Gen4
  // (x32): from then on the payload DMA, not the port, limits the rate.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  NicParams nic = no_cc();
  nic.pcie_faults.push_back({topo.port_id(0, 0), SimTime::us(400), 4});
  const std::vector<Connection> conns = {Connection{topo.port_id(0, 0), topo.port_id(1, 0)}};
  Transfer t;
  t.messages = 200;
  t.message_bytes = 1 << 20;
  const SimTime every = SimTime::us(100);
  BulkApp app({t}, conns, topo, every);
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(2);
  const auto r = run_rdma(topo, conns, nic, default_fabric(), &app, sync, opt);
  ASSERT_TRUE(r.ok());
  const BulkResult b = app.result(sync);
  ASSERT_GE(b.samples.size(), 12u);
  const PcieParams before = size_for_port(nic.pcie, DataRate::gbps(1600));
  const PcieParams after = degrade(before, 4);
  const double pcie_gbps = static_cast<double>(effective_bandwidth(after).bits_per_second()) / 1e9;
  EXPECT_NEAR(b.gbps(0, 1, 3, every), effective_gbps(1600, 4096), 0.03 * 1568.6);
  EXPECT_NEAR(b.gbps(0, 6, 10, every), pcie_gbps, 0.03 * pcie_gbps);
  EXPECT_EQ(r->rdma.nics[topo.port_id(0, 0)].pcie_degrades, 1u);
}

TEST(RdmaHost, BlueFlameInlineSkipsTheWqeFetchAndThePayloadDma) {
  // A 64 B WRITE posted inline: the doorbell carries the WQE and the data (their PCIe transfer),
  // so neither the WQE fetch nor the payload DMA read happens.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteLat, 64, 10);
  NicParams nic = no_cc();
  const auto plain = perftest(topo, spec, nic);
  nic.inline_threshold = 220;
  const auto inl = perftest(topo, spec, nic);
  const MessageTrace& a = plain.run.rdma.traces[0];
  const MessageTrace& b = inl.run.rdma.traces[0];
  const PcieParams pcie = size_for_port(nic.pcie, DataRate::gbps(1600));
  EXPECT_EQ(b.wqe_fetch, 0);
  EXPECT_EQ(b.dma, 0);
  EXPECT_EQ(b.doorbell - a.doorbell, transfer_time(pcie, Bytes(64 + 64)).picoseconds());
  EXPECT_EQ(a.wqe_fetch, (pcie.read_latency + nic.cycles(nic.wqe_fetch.cycles)).picoseconds());
  EXPECT_EQ(plain.perf.samples_ps.front() - inl.perf.samples_ps.front(),
            a.wqe_fetch + a.dma - (b.doorbell - a.doorbell));
}

TEST(RdmaHost, DescriptorPrefetchFetchesSeveralWqesPerPcieRead) {
  // write_bw posts 128 WQEs at once: each PCIe read brings up to wqe_prefetch (4) of them.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteBw, 4096, 128);
  NicParams nic = no_cc();
  const auto o = perftest(topo, spec, nic);
  EXPECT_EQ(o.run.rdma.nics[spec.a].wqe_fetches, 128u / 4);
  nic.wqe_prefetch = 1;
  EXPECT_EQ(perftest(topo, spec, nic).run.rdma.nics[spec.a].wqe_fetches, 128u);
}

TEST(RdmaHost, AQpContextCacheTooSmallForTheQpsCostsPcieReads) {
  // 64 QPs of 64 B WRITEs: with the default 1,024 contexts every QP stays cached after its first
  // use; with room for 8 contexts the round robin over 64 QPs misses nearly always, and every
  // miss adds a PCIe read to the message's path (posting and packet generation), so messages
  // take longer and the rate with two outstanding per QP falls.
  const auto topo = leaf_spine(1, 1, 2, "1.6T");
  PerftestSpec spec = between_hosts(topo, PerftestKind::kWriteBw, 64, 200);
  spec.qps = 64;
  spec.tx_depth = 2;  // completions come back interleaved, so the QPs take turns
  NicParams nic = no_cc();
  const auto big = perftest(topo, spec, nic);
  nic.qp_cache = Bytes(8 * 256);
  const auto small = perftest(topo, spec, nic);
  const NicStats& b = big.run.rdma.nics[spec.a];
  const NicStats& s = small.run.rdma.nics[spec.a];
  EXPECT_LE(b.ctx_misses, 64u);  // each QP's first use
  EXPECT_GT(s.ctx_misses, 10 * b.ctx_misses);
  EXPECT_LT(small.perf.mpps(), 0.85 * big.perf.mpps());
  EXPECT_GT(small.perf.average_us(), big.perf.average_us() + 0.2);
}

// The fabric is set up from what the congestion control declares it needs, not from its name.
TEST(RdmaHost, ConfigureFabricTurnsOnIntOnlyForAnAlgorithmThatNeedsIt) {
  for (const char* name : {"none", "dcqcn", "hpcc"}) {
    NicParams nic;
    nic.cc.algorithm = name;
    nic.cc.hpcc.base_rtt = SimTime::us(3);
    fabric::FabricParams fp;
    const SimTime default_window = fp.telemetry_rtt;
    configure_fabric(nic, fp);
    const bool hpcc = std::string(name) == "hpcc";
    EXPECT_EQ(fp.telemetry, hpcc) << name;
    EXPECT_EQ(fp.telemetry_rtt, hpcc ? SimTime::us(3) : default_window) << name;
  }
}

}  // namespace
}  // namespace stepsim::nic
