// The unordered transport's (transport.kind uet) loss detection: its SACK encoding, the sender's
// board, and whole runs. A sprayed permutation without loss resends nothing (a reorder-intolerant
// detection, such as a NAK after 16 later packets, resends thousands of packets here); under
// spraying, trimming and bit-error loss every byte arrives exactly once and the counters add up:
// every transmission beyond a PSN's first is a retransmission, and each retransmission answers a
// trimmed packet, a frame lost in the fabric, or arrived as a duplicate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/nic/sack_board.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

using testing::leaf_spine;

struct UsOutcome {
  RdmaRun run;
  BulkResult bulk;
  std::int64_t psns = 0;  ///< PSNs the transfers needed
};

constexpr std::int64_t kUsMessage = 65536;
constexpr int kUsMessages = 32;

UsOutcome us_run(const topology::Topology& topo, const std::vector<Connection>& conns,
                 const std::vector<std::string>& nic_sets,
                 const std::vector<std::string>& fabric_sets) {
  NicParams nic;
  auto table = nic_param_table(nic);
  for (const std::string& kv : nic_sets) EXPECT_TRUE(table.apply(kv).ok()) << kv;
  fabric::FabricParams fp;
  auto ft = fabric::fabric_param_table(fp);
  for (const std::string& kv : fabric_sets) EXPECT_TRUE(ft.apply(kv).ok()) << kv;
  std::vector<Transfer> transfers;
  for (std::uint32_t i = 0; i < conns.size(); ++i) {
    Transfer t;
    t.connection = i;
    t.message_bytes = kUsMessage;
    t.messages = kUsMessages;
    transfers.push_back(t);
  }
  BulkApp app(transfers, conns, topo, SimTime::zero());
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(20);
  auto r = run_rdma(topo, conns, nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  UsOutcome out{std::move(r).value(), app.result(sync), 0};
  const std::int64_t mtu = fp.mtu.count();
  out.psns = static_cast<std::int64_t>(conns.size()) * kUsMessages * ((kUsMessage + mtu - 1) / mtu);
  return out;
}

QpStats us_total(const UsOutcome& x) {
  QpStats s;
  for (const QpStats& e : x.run.rdma.endpoints) {
    s.packets += e.packets;
    s.retransmitted += e.retransmitted;
    s.duplicates += e.duplicates;
    s.trimmed += e.trimmed;
    s.timeouts += e.timeouts;
    s.out_of_order += e.out_of_order;
    s.sack_losses += e.sack_losses;
    s.nacks_received += e.nacks_received;
    s.naks_sent += e.naks_sent;
  }
  return s;
}

void us_expect_all_delivered(const UsOutcome& x) {
  for (std::size_t t = 0; t < x.bulk.bytes.size(); ++t) {
    EXPECT_EQ(x.bulk.bytes[t], kUsMessage * kUsMessages) << "transfer " << t;
    EXPECT_EQ(x.bulk.errors[t], 0) << "transfer " << t;
    EXPECT_GE(x.bulk.done_ps[t], 0) << "transfer " << t;
  }
}

// Host h of leaf 0 and host h of leaf 1 stream to each other over 2 spines (2:1 oversubscribed):
// every packet takes its own spine.
std::vector<Connection> us_permutation(const topology::Topology& topo, std::uint32_t hosts) {
  std::vector<Connection> conns;
  for (std::uint32_t h = 0; h < hosts; ++h) {
    for (int dir = 0; dir < 2; ++dir) {
      Connection c;
      c.a = topo.port_id(static_cast<topology::NodeId>(dir == 0 ? h : hosts + h), 0);
      c.b = topo.port_id(static_cast<topology::NodeId>(dir == 0 ? hosts + h : h), 0);
      c.entropy = static_cast<std::uint16_t>(30000 + 2 * h + dir);
      conns.push_back(c);
    }
  }
  return conns;
}

const std::vector<std::string> kUsUet = {"transport.kind=uet", "cc.algorithm=nscc"};

TEST(UetSack, UetWithoutACongestionControlPicksNsccAndAChosenOneWins) {
  {
    NicParams nic;
    ASSERT_TRUE(nic_param_table(nic).apply("transport.kind=uet").ok());
    EXPECT_EQ(nic.cc.algorithm, "nscc");
    ASSERT_TRUE(nic_param_table(nic).apply("transport.kind=roce").ok());
    EXPECT_EQ(nic.cc.algorithm, "dcqcn");
  }
  for (const bool cc_first : {true, false}) {
    NicParams nic;
    auto table = nic_param_table(nic);
    const std::string kind = "transport.kind=uet";
    const std::string cc = "cc.algorithm=dcqcn";
    ASSERT_TRUE(table.apply(cc_first ? cc : kind).ok());
    ASSERT_TRUE(table.apply(cc_first ? kind : cc).ok());
    EXPECT_EQ(nic.cc.algorithm, "dcqcn") << cc_first;
  }
  NicParams nic;
  auto table = nic_param_table(nic);
  EXPECT_FALSE(table.apply("transport.kind=tcp").ok());
  ASSERT_TRUE(table.apply("transport.kind=uet").ok());
  ASSERT_TRUE(table.apply("transport.sr_window=65536").ok());
  EXPECT_FALSE(nic.validate().ok());  // the ACK's 16-bit echo offset
}

TEST(UetSack, AckFieldsRoundTrip) {
  for (const auto& [cack, echo] : {std::pair{100u, 140u}, std::pair{100u, 99u},
                                   std::pair{70000u, 70000u + 4095u}, std::pair{5u, 0u}}) {
    const std::uint32_t arg = pack_sack(cack, echo, 0xa5c3);
    EXPECT_EQ(unpack_echo(cack, arg), echo);
    EXPECT_EQ(unpack_bits(arg), 0xa5c3);
  }
  EXPECT_EQ(unpack_echo(100000, pack_sack(100000, 10, 0)), kNoPsn);  // too far below
}

TEST(UetSack, BoardDeclaresLostOnlyPastTheReorderWindow) {
  SackBoard b;
  b.init(64);
  for (std::uint32_t p = 0; p < 10; ++p) b.on_departure(p, 4158, SimTime::ns(100 * p));
  std::vector<std::uint32_t> lost;
  auto note = [&](std::uint32_t p) { lost.push_back(p); };
  // PSN 3 arrives (sent 300 ns): nothing sent 500 ns before it is missing yet.
  EXPECT_EQ(b.sack(3, SimTime::ns(2300)), 4158u);
  EXPECT_EQ(b.sack(3, SimTime::ns(2400)), 0u);
  EXPECT_EQ(b.max_rtt(), SimTime::ns(2000));  // no news twice
  b.detect(0, 10, SimTime::ns(500), note);
  EXPECT_TRUE(lost.empty());
  // PSN 9 (sent 900 ns): PSNs 0..3 were sent more than 500 ns before it; 3 arrived.
  b.sack(9, SimTime::ns(2400));
  EXPECT_EQ(b.max_rtt(), SimTime::ns(2000));
  b.detect(0, 10, SimTime::ns(500), note);
  EXPECT_EQ(lost, (std::vector<std::uint32_t>{0, 1, 2}));
  // Each hole once; a hole that arrives late is not declared again, nor a trimmed one twice.
  b.detect(0, 10, SimTime::ns(500), note);
  EXPECT_EQ(lost.size(), 3u);
  EXPECT_FALSE(b.mark_lost(1, true));
  EXPECT_TRUE(b.suspect(1));  // declared from the SACKs: its first copy may still arrive
  EXPECT_TRUE(b.mark_lost(5, true));
  EXPECT_FALSE(b.mark_lost(5, true));
  EXPECT_FALSE(b.suspect(5));  // trimmed: the first copy never arrives
  // Cumulative acknowledgement frees the slots and returns the SACK credit.
  EXPECT_EQ(b.release(3), 4158u);
  EXPECT_EQ(b.release(4), 0u);
}

TEST(UetSack, SprayedPermutationWithoutLossResendsNothing) {
  for (const char* port : {"400G", "1.6T"}) {
    constexpr std::uint32_t kHosts = 4;
    const auto topo = leaf_spine(2, 2, kHosts, port);
    const UsOutcome x =
        us_run(topo, us_permutation(topo, kHosts), kUsUet, {"fabric.pfc=false", "fabric.ecn=true"});
    us_expect_all_delivered(x);
    const QpStats s = us_total(x);
    EXPECT_GT(s.out_of_order, 1000u) << port;  // the spraying reordered
    EXPECT_EQ(s.retransmitted, 0u) << port;
    EXPECT_EQ(s.duplicates, 0u) << port;
    EXPECT_EQ(s.timeouts, 0u) << port;
    EXPECT_EQ(s.naks_sent, 0u) << port;
    EXPECT_EQ(x.run.summary.drops(), 0u) << port;
    EXPECT_EQ(static_cast<std::int64_t>(s.packets), x.psns) << port;
    // The reordering is deeper than a short window: with 50 ns the same run resends packets
    // that were only late (each arrives twice), and still delivers every byte.
    std::vector<std::string> tight = kUsUet;
    tight.push_back("transport.reorder_window=50ns");
    const UsOutcome y =
        us_run(topo, us_permutation(topo, kHosts), tight, {"fabric.pfc=false", "fabric.ecn=true"});
    us_expect_all_delivered(y);
    const QpStats t = us_total(y);
    EXPECT_GT(t.retransmitted, 0u) << port;
    EXPECT_EQ(t.duplicates, t.retransmitted) << port;
    // (a hole whose first copy a SACK reports before its resend leaves is not resent)
    EXPECT_GE(t.sack_losses, t.retransmitted) << port;
  }
}

TEST(UetSack, EveryByteOnceUnderSprayingTrimmingAndBitErrors) {
  // An 8:1 incast across the spines into a small buffer (trims), on links whose bit errors
  // lose frames (no FEC), beside a sprayed permutation's reordering.
  constexpr std::uint32_t kHosts = 4;
  const auto topo = leaf_spine(2, 2, kHosts, "400G");
  std::vector<Connection> conns = us_permutation(topo, kHosts);
  for (std::uint32_t h = 1; h < 2 * kHosts; ++h) {
    if (h == kHosts) continue;
    Connection c;
    c.a = topo.port_id(static_cast<topology::NodeId>(h), 0);
    c.b = topo.port_id(static_cast<topology::NodeId>(kHosts), 0);
    c.entropy = static_cast<std::uint16_t>(31000 + h);
    conns.push_back(c);
  }
  const UsOutcome x = us_run(topo, conns, kUsUet,
                             {"fabric.pfc=false", "fabric.trimming=true", "fabric.buffer=256KiB",
                              "fabric.fec=false", "fabric.ber=1e-7"});
  us_expect_all_delivered(x);
  const QpStats s = us_total(x);
  const fabric::FabricSummary& f = x.run.summary;
  EXPECT_GT(s.trimmed, 0u);
  EXPECT_GT(f.drops_fec, 0u);
  // Each PSN's first transmission, then the retransmissions.
  EXPECT_EQ(static_cast<std::int64_t>(s.packets),
            x.psns + static_cast<std::int64_t>(s.retransmitted));
  // Every retransmission answers a transmission that was trimmed, lost in the fabric (data or,
  // for a SACK that never came, an ACK) or arrived twice; each trimmed one is resent.
  EXPECT_GE(s.retransmitted, s.trimmed + s.duplicates);
  EXPECT_LE(s.retransmitted, s.trimmed + s.duplicates + f.drops());
  // Trim NACKs (unless a bit error took one) and the SACKs found the holes, not the timer alone.
  EXPECT_LE(s.nacks_received, s.trimmed);
  EXPECT_GT(s.nacks_received, 0u);
  EXPECT_GT(s.sack_losses, 0u);
}

}  // namespace
}  // namespace stepsim::nic
