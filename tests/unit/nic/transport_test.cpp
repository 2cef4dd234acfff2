// The RC transport under loss, reordering, failures and a full CQ, one rank.
#include <gtest/gtest.h>

#include <cmath>

#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/phy/fec.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

using testing::leaf_spine;

struct Bulk {
  RdmaRun run;
  BulkResult bulk;
};

Bulk bulk(const topology::Topology& topo, const std::vector<Connection>& conns,
          const std::vector<Transfer>& transfers, const NicParams& nic,
          const fabric::FabricParams& fp, SimTime end) {
  BulkApp app(transfers, conns, topo, SimTime::zero());
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = end;
  auto r = run_rdma(topo, conns, nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return Bulk{std::move(r).value(), app.result(sync)};
}

Connection conn(topology::PortId a, topology::PortId b, std::uint16_t sport = 50000) {
  Connection c;
  c.a = a;
  c.b = b;
  c.entropy = sport;
  return c;
}

Transfer transfer(std::uint32_t c, std::int64_t message, int messages, int depth = 16) {
  Transfer t;
  t.connection = c;
  t.message_bytes = message;
  t.messages = messages;
  t.depth = depth;
  return t;
}

NicParams nic_with(const char* cc, const char* r) {
  NicParams p;
  p.cc.algorithm = cc;
  p.retransmission = r;
  return p;
}

TEST(Transport, RetransmissionsMatchTheLossesABitErrorRateCauses) {
  // No FEC, BER 1e-7 on every link: a 4,158 B frame is lost with 1 - (1 - 1e-7)^(8 x 4158)
  // = 0.33% per link, twice on the way host -> leaf -> host. With selective repeat every lost
  // data packet is sent once more, so retransmissions follow a binomial law with that p.
  const auto topo = leaf_spine(1, 1, 2);
  fabric::FabricParams fp;
  fp.fec = false;
  fp.ber_override = 1e-7;
  const auto b =
      bulk(topo, {conn(topo.port_id(0, 0), topo.port_id(1, 0))}, {transfer(0, 1 << 20, 80)},
           nic_with("none", "selective"), fp, SimTime::ms(50));
  ASSERT_EQ(b.bulk.done_ps[0] >= 0, true);
  const QpStats& q = b.run.rdma.endpoints[endpoint_of(0, 0)];
  const double p_link = phy::raw_frame_error_probability(1e-7, Bytes(4096 + 62));
  const double p = 1 - (1 - p_link) * (1 - p_link);
  const double n = static_cast<double>(q.packets);
  const double mean = n * p;
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(q.retransmitted), mean, 4 * sd + 2)
      << "packets " << q.packets << " timeouts " << q.timeouts;
  // The fabric's FEC drop counters on the data direction agree.
  const auto& ports = b.run.fabric.ports;
  const std::uint64_t data_drops =
      ports[topo.port_id(0, 0)].drops_fec + ports[topo.port_id(2, 1)].drops_fec;
  EXPECT_NEAR(static_cast<double>(data_drops), static_cast<double>(q.retransmitted),
              static_cast<double>(q.timeouts) + 1);
  EXPECT_GT(q.retransmitted, 50u);
  // The run's summary adds the endpoints up (the receiver retransmits nothing).
  const RdmaSummary sum = summarize(b.run.rdma);
  EXPECT_EQ(sum.qp.retransmitted, q.retransmitted);
  EXPECT_EQ(sum.qp.packets, q.packets);
  EXPECT_EQ(sum.qps_in_error, 0u);
}

TEST(Transport, GoBackNResendsTheWholeWindowAfterALoss) {
  // The same losses under Go-Back-N cost many more packets than under selective repeat.
  const auto topo = leaf_spine(1, 1, 2);
  fabric::FabricParams fp;
  fp.fec = false;
  fp.ber_override = 1e-7;
  const std::vector<Connection> c = {conn(topo.port_id(0, 0), topo.port_id(1, 0))};
  const std::vector<Transfer> t = {transfer(0, 1 << 20, 40)};
  const auto gbn = bulk(topo, c, t, nic_with("none", "gbn"), fp, SimTime::ms(50));
  const auto sr = bulk(topo, c, t, nic_with("none", "selective"), fp, SimTime::ms(50));
  ASSERT_GE(gbn.bulk.done_ps[0], 0);
  ASSERT_GE(sr.bulk.done_ps[0], 0);
  EXPECT_GT(gbn.run.rdma.endpoints[0].retransmitted, 3 * sr.run.rdma.endpoints[0].retransmitted);
  EXPECT_GT(gbn.run.rdma.endpoints[1].naks_sent, 0u);
}

// Two leaves, four spines whose cables are 20, 60, 100 and 140 m long: sprayed packets take paths
// whose latencies differ by up to 600 ns, so they arrive out of order.
topology::Topology uneven_leaf_spine() {
  using topology::CableKind;
  using topology::NodeKind;
  topology::Topology t;
  t.name = "uneven";
  t.generator = "test";
  t.port_types.push_back(phy::standard_port("400G").value());
  t.add_node(NodeKind::kServer, 0, 1, 0, 0, 1);
  t.add_node(NodeKind::kServer, 0, 1, 1, 0, 1);
  t.add_node(NodeKind::kSwitch, 1, 5, 0);
  t.add_node(NodeKind::kSwitch, 1, 5, 1);
  for (int s = 0; s < 4; ++s) t.add_node(NodeKind::kSwitch, 2, 2);
  t.connect(0, 0, 2, 0, 0, CableKind::kDac, Length::m(2));
  t.connect(1, 0, 3, 0, 0, CableKind::kDac, Length::m(2));
  for (std::uint32_t s = 0; s < 4; ++s) {
    const Length len = Length::m(20 + 40 * static_cast<std::int64_t>(s));
    t.connect(2, 1 + s, 4 + s, 0, 0, CableKind::kOptics, len);
    t.connect(3, 1 + s, 4 + s, 1, 0, CableKind::kOptics, len);
  }
  return t;
}

TEST(Transport, SelectiveRepeatBeatsGoBackNUnderSpraying) {
  const auto topo = uneven_leaf_spine();
  fabric::FabricParams fp;
  fp.lb.policy = "spray";
  const std::vector<Connection> c = {conn(topo.port_id(0, 0), topo.port_id(1, 0))};
  const std::vector<Transfer> t = {transfer(0, 1 << 20, 20)};
  const auto gbn = bulk(topo, c, t, nic_with("none", "gbn"), fp, SimTime::ms(50));
  const auto sr = bulk(topo, c, t, nic_with("none", "selective"), fp, SimTime::ms(50));
  ASSERT_GE(gbn.bulk.done_ps[0], 0);
  ASSERT_GE(sr.bulk.done_ps[0], 0);
  const double goodput_gbn =
      20.0 * (1 << 20) * 8 / (static_cast<double>(gbn.bulk.done_ps[0]) * 1e-12) / 1e9;
  const double goodput_sr =
      20.0 * (1 << 20) * 8 / (static_cast<double>(sr.bulk.done_ps[0]) * 1e-12) / 1e9;
  EXPECT_GT(sr.run.rdma.endpoints[1].out_of_order, 1000u)  // spraying reorders
      << "sr retx " << sr.run.rdma.endpoints[0].retransmitted << " naks "
      << sr.run.rdma.endpoints[1].naks_sent << " to " << sr.run.rdma.endpoints[0].timeouts
      << " ooo " << sr.run.rdma.endpoints[1].out_of_order << " gbn " << goodput_gbn;
  EXPECT_GT(goodput_sr, 0.9 * 400 * 4096 / 4178.0) << goodput_sr;
  EXPECT_GT(goodput_sr, 1.5 * goodput_gbn) << goodput_sr << " vs " << goodput_gbn;
  EXPECT_GT(gbn.run.rdma.endpoints[0].retransmitted, 1000u);  // the NAK storm
}

TEST(Transport, RetryExhaustionMovesTheQpToErrorAndReportsIt) {
  // The only path goes down for good at 60 us: the requester times out retry_count + 1 times,
  // then the QP is in ERROR and the work requests complete with an error status.
  const auto topo = leaf_spine(1, 1, 2);
  fabric::FabricParams fp;
  fp.faults.push_back({fabric::FaultSpec::Kind::kDown, 1, SimTime::us(60), 0});  // leaf - host 1
  NicParams nic = nic_with("none", "gbn");
  nic.retry_count = 3;
  nic.rto = SimTime::us(10);
  const auto b = bulk(topo, {conn(topo.port_id(0, 0), topo.port_id(1, 0))},
                      {transfer(0, 1 << 20, 10)}, nic, fp, SimTime::ms(5));
  const QpStats& q = b.run.rdma.endpoints[endpoint_of(0, 0)];
  EXPECT_EQ(q.state, static_cast<std::uint64_t>(QpState::kError));
  EXPECT_EQ(q.error, static_cast<std::uint64_t>(QpError::kRetryExceeded));
  EXPECT_EQ(q.timeouts, 4u);
  EXPECT_LT(b.bulk.done_ps[0], 0);  // incomplete
  EXPECT_GT(b.bulk.errors[0], 0);   // the app saw error completions
  EXPECT_GT(b.bulk.bytes[0], 0);    // what completed before the failure counts
}

// Posts `count` signaled WRITEs at the start and never polls.
class NeverPolls final : public RdmaApp {
 public:
  explicit NeverPolls(int count) : count_(count) {}
  void on_start(Verbs& v) override {
    if (v.server() != 0) return;
    for (int i = 0; i < count_; ++i) {
      WorkRequest wr;
      wr.bytes = 4096;
      wr.wr_id = static_cast<std::uint64_t>(i);
      v.post(0, wr);
    }
  }
  void on_cq(Verbs&, std::uint32_t) override {}

 private:
  int count_;
};

TEST(Transport, ACompletionQueueThatOverflowsPutsTheQpInError) {
  const auto topo = leaf_spine(1, 1, 2);
  NicParams nic = nic_with("none", "gbn");
  nic.cq_depth = 16;
  const std::vector<Connection> c = {conn(topo.port_id(0, 0), topo.port_id(1, 0))};
  for (int posted : {16, 64}) {
    NeverPolls app(posted);
    pdes::SerialSync sync;
    pdes::EngineOptions opt;
    opt.end = SimTime::ms(1);
    const fabric::FabricParams fp;  // named: a `{}` temporary trips GCC 12's maybe-uninitialized
    auto r = run_rdma(topo, c, nic, fp, &app, sync, opt);
    ASSERT_TRUE(r.ok());
    const QpStats& q = r->rdma.endpoints[0];
    if (posted <= nic.cq_depth) {
      EXPECT_EQ(q.state, static_cast<std::uint64_t>(QpState::kRts));
      EXPECT_EQ(r->rdma.nics[topo.port_id(0, 0)].cq_overflows, 0u);
    } else {
      EXPECT_EQ(q.state, static_cast<std::uint64_t>(QpState::kError));
      EXPECT_EQ(q.error, static_cast<std::uint64_t>(QpError::kCqOverflow));
      EXPECT_GT(r->rdma.nics[topo.port_id(0, 0)].cq_overflows, 0u);
    }
  }
}

TEST(Transport, QpStateMachineFollowsTheSpec) {
  EXPECT_TRUE(transition_allowed(QpState::kReset, QpState::kInit));
  EXPECT_TRUE(transition_allowed(QpState::kInit, QpState::kRtr));
  EXPECT_TRUE(transition_allowed(QpState::kRtr, QpState::kRts));
  EXPECT_FALSE(transition_allowed(QpState::kReset, QpState::kRts));
  EXPECT_FALSE(transition_allowed(QpState::kInit, QpState::kRts));
  EXPECT_FALSE(transition_allowed(QpState::kError, QpState::kRts));
  EXPECT_TRUE(transition_allowed(QpState::kError, QpState::kReset));
  EXPECT_TRUE(transition_allowed(QpState::kRts, QpState::kError));
}

}  // namespace
}  // namespace stepsim::nic
