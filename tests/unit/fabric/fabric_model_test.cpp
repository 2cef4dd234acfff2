// The packet-level fabric on hand-built leaf-spine fabrics, one rank (SerialSync).
#include "stepsim/fabric/fabric_model.hpp"

#include <gtest/gtest.h>

#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/phy/fec.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::fabric {
namespace {

using testing::leaf_spine;

FabricRun run(const topology::Topology& topo, const std::vector<Flow>& flows,
              const FabricParams& params, int threads = 1, SimTime end = SimTime::ms(10)) {
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.threads = threads;
  opt.end = end;
  auto r = run_fabric(topo, flows, params, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

Flow flow(std::uint32_t id, topology::PortId src, topology::PortId dst, std::int64_t bytes,
          std::uint16_t entropy = 50000) {
  Flow f;
  f.id = id;
  f.src_nic = src;
  f.dst_nic = dst;
  f.bytes = bytes;
  f.entropy = entropy;
  f.qp = 0x100 + id;
  return f;
}

topology::Topology dragonfly_small() {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) +
                                 "/topologies/dragonfly-small.yaml")
      .value();
}

TEST(FabricModel, SingleFlowCompletesWhenComputedByHand) {
  // host -> leaf -> spine -> leaf -> host, cut-through, one flow of N full packets at line rate:
  // the last packet leaves the source at (N-1) ser; each switch forwards its header after
  // hdr + link latency + switch latency; the last hop delivers the tail:
  // end = N ser + 3 (hdr + switch latency) + latency(host-leaf) x 2 + latency(leaf-spine) x 2.
  const auto topo = leaf_spine(2, 1, 1);
  FabricParams p;
  const std::int64_t n = 50;
  const auto r = run(topo, {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), n * 4096)}, p);
  const DataRate rate = DataRate::gbps(400);
  const SimTime ser = rate.serialization_time(Bytes(4096 + 62 + 20));
  const SimTime hdr = rate.serialization_time(Bytes(64));
  const SimTime dac = topo.links[0].latency;
  const SimTime aoc = topo.links[1].latency;
  const SimTime want = ser * n + (hdr + p.sw.latency) * 3 + dac * 2 + aoc * 2;
  ASSERT_EQ(r.summary.flows_complete, 1u);
  EXPECT_EQ(r.results.flows[0].end_ps, want.picoseconds());
  EXPECT_EQ(r.summary.packet_hops, static_cast<std::uint64_t>(4 * n));
  EXPECT_EQ(r.summary.drops_buffer + r.summary.drops_fec, 0u);
}

TEST(FabricModel, StoreAndForwardAddsOneSerializationPerSwitch) {
  const auto topo = leaf_spine(2, 1, 1);
  FabricParams p;
  p.sw.cut_through = false;
  const auto r = run(topo, {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), 10 * 4096)}, p);
  const SimTime ser = DataRate::gbps(400).serialization_time(Bytes(4096 + 62 + 20));
  const SimTime want =
      ser * 10 + (ser + p.sw.latency) * 3 + topo.links[0].latency * 2 + topo.links[1].latency * 2;
  EXPECT_EQ(r.results.flows[0].end_ps, want.picoseconds());
}

std::vector<Flow> incast(const topology::Topology& topo, std::uint32_t senders,
                         std::int64_t bytes) {
  std::vector<Flow> f;
  for (std::uint32_t i = 1; i <= senders; ++i)
    f.push_back(flow(i - 1, topo.port_id(i, 0), topo.port_id(0, 0), bytes));
  return f;
}

TEST(FabricModel, AOnePacketWindowIsStopAndWait) {
  // Window = one packet: each packet waits for the previous one's ACK, so a flow of N packets
  // takes about N round trips (data one way, 64 B ACK back) instead of N serializations.
  const auto topo = leaf_spine(2, 1, 1);
  const std::int64_t n = 40;
  Flow f = flow(0, topo.port_id(0, 0), topo.port_id(1, 0), n * 4096);
  FabricParams p;
  const auto free_run = run(topo, {f}, p);
  Flow one = f;
  one.bytes = 4096;
  const SimTime one_way = SimTime::ps(run(topo, {one}, p).results.flows[0].end_ps);
  f.window = 4096;
  const auto windowed = run(topo, {f}, p);
  ASSERT_EQ(windowed.summary.flows_complete, 1u);
  const double per_packet = static_cast<double>(windowed.results.flows[0].end_ps) / n;
  EXPECT_GT(per_packet, 1.5 * static_cast<double>(one_way.picoseconds()));
  EXPECT_LT(per_packet, 2.0 * static_cast<double>(one_way.picoseconds()));
  EXPECT_GT(windowed.results.flows[0].end_ps, 10 * free_run.results.flows[0].end_ps);
  // Every data packet was acknowledged: 4 hops each way.
  EXPECT_EQ(windowed.summary.packet_hops, static_cast<std::uint64_t>(8 * n));
  // A window of the bandwidth-delay product or more runs at line rate.
  f.window = 64 * 4096;
  EXPECT_EQ(run(topo, {f}, p).results.flows[0].end_ps, free_run.results.flows[0].end_ps);
}

TEST(FabricModel, AReceiverLinkGoingDownStallsWindowedFlows) {
  // Window-based incast: the receiver's link goes down mid-transfer. Data queued for it at the
  // leaf (and any ACKs waiting at its NIC) are dropped and counted; without ACKs the senders'
  // windows stay shut (no retransmission yet), and no buffer accounting goes wrong.
  const auto topo = leaf_spine(1, 1, 9);
  std::vector<Flow> flows;
  for (std::uint32_t i = 1; i <= 8; ++i) {
    Flow f = flow(i - 1, topo.port_id(i, 0), topo.port_id(0, 0), 200 * 4096);
    f.window = 16 * 4096;
    flows.push_back(f);
  }
  FabricParams p;
  p.faults.push_back({FaultSpec::Kind::kDown, 0, SimTime::us(20), 0});  // link 0: host0-leaf
  const auto r = run(topo, flows, p);
  EXPECT_GT(r.summary.drops_link_down, 0u);
  EXPECT_EQ(r.summary.flows_complete, 0u);
  EXPECT_EQ(r.summary.drops_buffer, 0u);
}

TEST(FabricModel, LosslessIncastWithComputedHeadroomDropsNothing) {
  const auto topo = leaf_spine(1, 1, 17);  // 16 senders and the receiver on one leaf
  FabricParams p;
  const auto r = run(topo, incast(topo, 16, 1'000'000), p);
  EXPECT_EQ(r.summary.drops_buffer, 0u);
  EXPECT_EQ(r.summary.flows_complete, 16u);
  EXPECT_GT(r.summary.pause_frames, 0u);
  EXPECT_GT(r.summary.paused_ps, 0);
  // The receiver's link is the bottleneck: 16 MB at 400G takes >= 320 us.
  EXPECT_GE(r.summary.last_byte_us, 16e6 * 8 / 400e9 * 1e6);
}

TEST(FabricModel, TooLittleHeadroomDrops) {
  const auto topo = leaf_spine(1, 1, 17);
  FabricParams p;
  p.pfc.headroom = Bytes(15'000);  // less than the in-flight bytes of a 2 m link plus 2 MTU
  p.pfc.xoff = Bytes(20'000);
  p.pfc.xon = Bytes(10'000);
  p.sw.latency = SimTime::us(2);  // slow PAUSE reaction: more in flight
  const auto r = run(topo, incast(topo, 16, 500'000), p);
  EXPECT_GT(r.summary.drops_buffer, 0u);
}

TEST(FabricModel, TheSharedBufferBoundsLosslessQueues) {
  // 16 ingress ports may each hold XOFF + headroom; a 1 MB shared buffer must still bound the
  // queue (issue 15: before, the buffer had no effect with PFC on).
  const auto topo = leaf_spine(1, 1, 17);
  FabricParams p;
  const auto big = run(topo, incast(topo, 16, 1'000'000), p);
  ASSERT_GT(big.summary.max_queue, 1'000'000);
  p.sw.buffer = Bytes(1'000'000);
  const auto small = run(topo, incast(topo, 16, 1'000'000), p);
  EXPECT_LE(small.summary.max_queue, 1'000'000);
  EXPECT_GT(small.summary.drops_buffer, 0u);
}

TEST(FabricModel, ABufferBelowXoffPlusHeadroomIsAUserError) {
  const auto topo = leaf_spine(1, 1, 3);
  FabricParams p;
  p.pfc.headroom = Bytes(50'000);  // XOFF 150 KB + 50 KB: at least 200,000 bytes
  p.sw.buffer = Bytes(199'999);
  pdes::SerialSync sync;
  const auto flows = incast(topo, 2, 10'000);
  const auto bad = run_fabric(topo, flows, p, sync, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("fabric.buffer (--buffer): "), std::string::npos);
  EXPECT_NE(bad.error().message.find("give at least 200000 bytes"), std::string::npos)
      << bad.error().message;
  p.sw.buffer = Bytes(200'000);
  EXPECT_TRUE(run_fabric(topo, flows, p, sync, {}).ok());
  p.sw.buffer = Bytes(1024);  // a lossy fabric may have any buffer
  p.pfc.enabled = false;
  EXPECT_TRUE(run_fabric(topo, flows, p, sync, {}).ok());
}

TEST(FabricModel, EcnMarksBeforeTheFirstPauseWhenThresholdsFollowTheRule) {
  // Kmin < Kmax < XON < XOFF (DOMAIN.md section 3): the defaults.
  const auto topo = leaf_spine(1, 1, 9);
  FabricParams p;
  ASSERT_LT(p.ecn.kmax, p.pfc.xon);
  const auto r = run(topo, incast(topo, 8, 1'000'000), p);
  ASSERT_GE(r.summary.first_mark_ps, 0);
  ASSERT_GE(r.summary.first_pause_ps, 0);
  EXPECT_LT(r.summary.first_mark_ps, r.summary.first_pause_ps);
  EXPECT_GT(r.summary.ecn_marks, 0u);
}

std::vector<Flow> many_qps(const topology::Topology& topo, std::uint32_t qps, Entropy e) {
  TrafficSpec spec;
  spec.pattern = "pair";
  spec.qps = qps;
  spec.flow_bytes = 64 * 4096;
  spec.entropy = e;
  return make_flows(topo, spec).value();
}

// Bytes each of the first leaf's uplinks carried.
std::vector<double> uplink_bytes(const topology::Topology& topo, const FabricResults& r,
                                 std::uint32_t hosts, std::uint32_t spines) {
  const topology::NodeId leaf0 = static_cast<topology::NodeId>(topo.server_count());
  std::vector<double> b;
  for (std::uint32_t s = 0; s < spines; ++s) {
    b.push_back(static_cast<double>(r.ports[topo.port_id(leaf0, hosts + s)].bytes));
  }
  return b;
}

double chi_square(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  double chi = 0;
  for (double x : v) chi += (x - mean) * (x - mean) / mean;
  return chi;
}

TEST(FabricModel, FixedSourcePortPolarizesEcmpOntoOnePath) {
  const auto topo = leaf_spine(2, 8, 1);
  FabricParams p;
  const auto r = run(topo, many_qps(topo, 64, Entropy::kFixed), p);
  const auto up = uplink_bytes(topo, r.results, 1, 8);
  int used = 0;
  for (double b : up) used += b > 0 ? 1 : 0;
  EXPECT_EQ(used, 1);
}

TEST(FabricModel, PerQpEntropySpreadsEcmp) {
  // 64 QPs of 64 packets over 8 uplinks: counting flows per uplink, chi-square with 7 degrees of
  // freedom stays below 24.3 (p = 0.001) if the hash spreads them uniformly.
  const auto topo = leaf_spine(2, 8, 1);
  FabricParams p;
  for (Entropy e : {Entropy::kUdpSport, Entropy::kFlowLabel}) {
    const auto r = run(topo, many_qps(topo, 64, e), p);
    auto up = uplink_bytes(topo, r.results, 1, 8);
    for (double& b : up) b /= 64 * (4096 + 62);  // flows per uplink
    int used = 0;
    for (double b : up) used += b > 0 ? 1 : 0;
    EXPECT_GE(used, 6);
    EXPECT_LT(chi_square(up), 24.3);
  }
}

TEST(FabricModel, SprayingFillsAllUplinksEvenly) {
  const auto topo = leaf_spine(2, 8, 1);
  FabricParams p;
  p.lb.policy = "spray";
  const auto r = run(topo, many_qps(topo, 16, Entropy::kFixed), p);
  const auto up = uplink_bytes(topo, r.results, 1, 8);
  const double mx = *std::max_element(up.begin(), up.end());
  const double mn = *std::min_element(up.begin(), up.end());
  EXPECT_LE(mx - mn, 4096 + 62);  // at most one packet apart
  EXPECT_GT(mn, 0);
}

TEST(FabricModel, LinkDownReroutesOrDrops) {
  const auto topo = leaf_spine(2, 2, 1);
  // Link ids: host0-leaf0 0, leaf0-spine0 1, leaf0-spine1 2, host1-leaf1 3, ...
  const topology::LinkId leaf0_spine0 = 1;
  ASSERT_EQ(topo.ports[topo.links[leaf0_spine0].a].node, topo.server_count());
  std::vector<Flow> flows;
  for (std::uint32_t q = 0; q < 16; ++q) {
    flows.push_back(flow(q, topo.port_id(0, 0), topo.port_id(1, 0), 40 * 4096,
                         static_cast<std::uint16_t>(50000 + 7 * q)));
  }
  FabricParams p;
  p.faults.push_back({FaultSpec::Kind::kDown, leaf0_spine0, SimTime::zero(), 0});
  const auto rerouted = run(topo, flows, p);
  EXPECT_EQ(rerouted.summary.flows_complete, 16u);
  EXPECT_EQ(rerouted.summary.drops_link_down, 0u);
  EXPECT_EQ(rerouted.results.ports[topo.links[leaf0_spine0].a].bytes, 0u);
  p.reroute = false;
  const auto dropped = run(topo, flows, p);
  EXPECT_GT(dropped.summary.drops_link_down, 0u);
  EXPECT_LT(dropped.summary.flows_complete, 16u);
}

TEST(FabricModel, LosingLanesSlowsTheLinkToTheLanesLeft) {
  // 1.6T on 8 lanes; losing 4 of them halves the host link: each of the N packets then spends one
  // more full-rate serialization on it, so the flow ends N x ser later (to within two packets:
  // the last packet's own time and the cut-through tail rule after a slower hop).
  const auto topo = leaf_spine(2, 1, 1, "1.6T");
  const std::vector<Flow> flows = {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), 2000 * 4096)};
  FabricParams p;
  const auto full = run(topo, flows, p);
  p.faults.push_back({FaultSpec::Kind::kLanes, 0, SimTime::zero(), 4});  // link 0: host0-leaf0
  const auto half = run(topo, flows, p);
  const SimTime ser = DataRate::gbps(1600).serialization_time(Bytes(4096 + 62 + 20));
  const std::int64_t delta = half.results.flows[0].end_ps - full.results.flows[0].end_ps;
  EXPECT_NEAR(static_cast<double>(delta), static_cast<double>((ser * 2000).picoseconds()),
              static_cast<double>(2 * ser.picoseconds()));
}

TEST(FabricModel, AFlappingLinkDelaysButLosesNothingWhenTheHostWaits) {
  // The host's own link flaps 4 times (down 5 us each): its NIC stops while the link is down, so
  // the flow finishes about 20 us later and nothing is dropped.
  const auto topo = leaf_spine(2, 1, 1);
  const std::vector<Flow> flows = {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), 2000 * 4096)};
  FabricParams p;
  const auto steady = run(topo, flows, p);
  add_flapping(p.faults, 0, SimTime::us(10), SimTime::us(20), SimTime::us(5), 4);
  ASSERT_EQ(p.faults.size(), 8u);
  const auto flapping = run(topo, flows, p);
  EXPECT_EQ(flapping.summary.flows_complete, 1u);
  EXPECT_EQ(flapping.summary.drops_link_down, 0u);
  const double delay_us =
      static_cast<double>(flapping.results.flows[0].end_ps - steady.results.flows[0].end_ps) * 1e-6;
  EXPECT_NEAR(delay_us, 20.0, 0.2);
}

TEST(FabricModel, BerZeroLosesNothingAndHighBerLosesTheExpectedShare) {
  const auto topo = leaf_spine(2, 1, 1);
  const std::vector<Flow> flows = {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), 2000 * 4096)};
  FabricParams p;
  p.ber_override = 0;
  EXPECT_EQ(run(topo, flows, p).summary.drops_fec, 0u);
  // BER 1.2e-3: p_cw ~ 1.5e-3 (binomial tail), 7 codewords per packet: ~1% of packets per hop.
  p.ber_override = 1.2e-3;
  const auto r = run(topo, flows, p);
  const double per_hop =
      phy::any_failure_probability(phy::codeword_failure_probability(phy::kKp4, 1.2e-3), 7);
  const double first_hop = 2000;  // every packet crosses the host link once
  EXPECT_NEAR(static_cast<double>(r.results.ports[topo.port_id(0, 0)].drops_fec),
              first_hop * per_hop, 5 * std::sqrt(first_hop * per_hop) + 1);
  EXPECT_GT(r.summary.fec_corrected, 0u);
}

// Cell fidelity (FabricParams::cell): one frame per cell, with the wire time of its packets.

TEST(FabricModel, ACellTakesTheWireTimeOfTheMtuPacketsItStandsFor) {
  // 64 KiB of payload in 4 KiB packets: 16 x (4096 + 62 headers + 20 preamble and gap).
  EXPECT_EQ(wire_bytes(65536 + kRoceHeaderBytes, 4096), 16 * (4096 + 62 + 20));
  EXPECT_EQ(wire_bytes(4096 + kRoceHeaderBytes, 4096), 4096 + 62 + 20);  // a packet is itself
  EXPECT_EQ(wire_bytes(kAckFrameBytes, 4096), kAckFrameBytes + 20);
  EXPECT_EQ(wire_bytes(5000 + kRoceHeaderBytes, 4096), 5000 + 2 * 62 + 2 * 20);  // 2 packets
}

TEST(FabricModel, ASingleFlowInCellsEndsWhenItsPacketsWould) {
  // Cut-through everywhere: the last byte arrives after the flow's wire time plus the path's
  // header and pipeline delays, whether it moves in 4 KiB packets or 64 KiB cells.
  const auto topo = leaf_spine(2, 1, 1);
  const std::vector<Flow> flows = {flow(0, topo.port_id(0, 0), topo.port_id(1, 0), 40 << 16)};
  FabricParams p;
  const auto packets = run(topo, flows, p);
  p.cell = Bytes(64 << 10);
  const auto cells = run(topo, flows, p);
  ASSERT_EQ(cells.summary.flows_complete, 1u);
  EXPECT_EQ(cells.results.flows[0].end_ps, packets.results.flows[0].end_ps);
  EXPECT_EQ(cells.summary.packet_hops * 16, packets.summary.packet_hops);
}

TEST(FabricModel, LosslessIncastInCellsPausesDropsNothingAndTakesAsLong) {
  // 16 senders into one receiver: PFC still holds the cells back (the headroom is computed for
  // a whole cell in flight) and the receiver's link still sets the pace.
  const auto topo = leaf_spine(1, 1, 17);
  FabricParams p;
  const auto packets = run(topo, incast(topo, 16, 1 << 20), p);
  p.cell = Bytes(64 << 10);
  const auto cells = run(topo, incast(topo, 16, 1 << 20), p);
  EXPECT_EQ(cells.summary.drops_buffer, 0u);
  EXPECT_EQ(cells.summary.flows_complete, 16u);
  EXPECT_GT(cells.summary.pause_frames, 0u);
  EXPECT_NEAR(cells.summary.last_byte_us / packets.summary.last_byte_us, 1.0, 0.02);
}

TEST(FabricModel, ACellIsLostWhenAnyOfItsCodewordsFails) {
  // FEC at cell fidelity: a cell spans the codewords of its packets and is lost if any fails
  // (its packets' losses, lumped: fewer, larger losses with the same expected bytes lost).
  const auto topo = leaf_spine(2, 1, 1);
  const std::int64_t cells = 400;
  const std::vector<Flow> flows = {
      flow(0, topo.port_id(0, 0), topo.port_id(1, 0), cells * (64 << 10))};
  FabricParams p;
  p.cell = Bytes(64 << 10);
  p.ber_override = 1.2e-3;
  const auto r = run(topo, flows, p);
  const double per_cell = phy::any_failure_probability(
      phy::codeword_failure_probability(phy::kKp4, 1.2e-3),
      phy::codewords_spanned(phy::kKp4, Bytes((64 << 10) + kRoceHeaderBytes)));
  const double want = static_cast<double>(cells) * per_cell;
  EXPECT_NEAR(static_cast<double>(r.results.ports[topo.port_id(0, 0)].drops_fec), want,
              5 * std::sqrt(want) + 1);
}

TEST(FabricModel, ValiantDetoursThroughAThirdGroupOnADragonfly) {
  const auto topo = dragonfly_small();
  TrafficSpec spec;
  spec.flow_bytes = 100'000;
  const auto flows = make_flows(topo, spec).value();
  FabricParams p;
  const auto minimal = run(topo, flows, p);
  p.routing = "valiant";
  const auto valiant = run(topo, flows, p);
  const auto valiant3 = run(topo, flows, p, 3);
  ASSERT_EQ(minimal.summary.flows_complete, flows.size());
  ASSERT_EQ(valiant.summary.flows_complete, flows.size());
  // Minimal paths take at most host, local, global, local, host links (5); Valiant up to 8.
  const double packets = static_cast<double>(flows.size()) * 25;  // 100,000 B / 4,096 B
  const double hops_min = static_cast<double>(minimal.summary.packet_hops) / packets;
  const double hops_val = static_cast<double>(valiant.summary.packet_hops) / packets;
  EXPECT_LE(hops_min, 5.0);
  EXPECT_GT(hops_val, hops_min + 1.0);
  EXPECT_LE(hops_val, 8.0);
  EXPECT_EQ(valiant.stats.digest, valiant3.stats.digest);
  // Valiant needs a dragonfly.
  pdes::SerialSync sync;
  const auto ft = testing::leaf_spine(2, 2, 2);
  const auto err = run_fabric(ft, {flow(0, ft.port_id(0, 0), ft.port_id(2, 0), 4096)}, p, sync, {});
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("valiant routing needs a dragonfly"), std::string::npos);
  // The dragonfly's trait, not its generator's name, is what valiant routing needs.
  topology::Topology unnamed = topo;
  ASSERT_TRUE(unnamed.traits.global_links);
  unnamed.traits.global_links = false;
  const auto refused = run_fabric(unnamed, flows, p, sync, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("valiant routing needs a dragonfly"), std::string::npos);
}

TEST(FabricModel, ValiantOnADragonflyDoesNotDeadlock) {
  // The README's example (issue 15): with one lossless lane, Valiant paths close cycles of PAUSE
  // between global and local links and 71 of 72 flows stalled. Virtual lanes per global hop
  // (valiant_detour.hpp) make the dependencies acyclic.
  const auto topo = dragonfly_small();
  TrafficSpec spec;
  spec.flow_bytes = 2'000'000;
  const auto flows = make_flows(topo, spec).value();
  FabricParams p;
  p.routing = "valiant";
  for (const char* lb : {"adaptive", "ecmp"}) {
    p.lb.policy = lb;
    const auto r = run(topo, flows, p);
    EXPECT_EQ(r.summary.flows_complete, flows.size()) << lb;
    EXPECT_EQ(r.summary.drops(), 0u) << lb;
    EXPECT_GT(r.summary.pause_frames, 0u) << lb;  // PFC did act
  }
}

TEST(FabricModel, ResultsDoNotDependOnThreads) {
  const auto topo = leaf_spine(4, 2, 4);
  TrafficSpec spec;
  spec.flow_bytes = 200'000;
  const auto flows = make_flows(topo, spec).value();
  FabricParams p;
  const auto one = run(topo, flows, p, 1);
  const auto three = run(topo, flows, p, 3);
  EXPECT_EQ(one.stats.digest, three.stats.digest);
  EXPECT_EQ(one.summary.packet_hops, three.summary.packet_hops);
  EXPECT_EQ(one.summary.flows_complete, flows.size());
}

}  // namespace
}  // namespace stepsim::fabric
