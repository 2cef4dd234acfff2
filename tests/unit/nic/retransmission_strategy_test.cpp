// The retransmission strategies, through their registry: what Go-Back-N and selective repeat send
// again after a NAK or a timeout, and what the responder does with a packet past a hole.
#include "src/nic/retransmission_strategy.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "stepsim/nic/nic_params.hpp"

namespace stepsim::nic {
namespace {

constexpr std::int64_t kStrategyMtu = 4096;

std::unique_ptr<RetransmissionStrategy> make(const std::string& name, std::uint32_t window = 16,
                                             std::uint32_t threshold = 3) {
  auto s = make_retransmission(name, RetransmissionConfig{window, threshold});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

// A QP that sent PSNs 0..9 of one WRITE and has 0..1 acknowledged.
QueuePair sent_ten() {
  QueuePair qp;
  qp.bring_up();
  Wqe w;
  w.wr.bytes = 10 * kStrategyMtu;
  qp.rq.number(w, kStrategyMtu);
  qp.rq.sq.push(w);
  qp.rq.next_psn = qp.rq.max_sent = 10;
  qp.rq.cursor = 1;
  qp.rq.una = 2;
  return qp;
}

TEST(RetransmissionStrategy, RegistryHasGbnAndSelectiveAndParsesTheOldNames) {
  EXPECT_EQ(retransmission_names(), (std::vector<std::string>{"gbn", "selective"}));
  EXPECT_EQ(*parse_retransmission("go_back_n"), "gbn");
  EXPECT_EQ(*parse_retransmission("sr"), "selective");
  EXPECT_EQ(*parse_retransmission("selective"), "selective");
  const auto bad = parse_retransmission("sack");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("allowed: auto, gbn, selective"), std::string::npos);
  EXPECT_FALSE(make_retransmission("sack", {}).ok());
}

// auto (the default) places out of order exactly when the load balancing reorders a flow.
TEST(RetransmissionStrategy, AutoIsSelectiveRepeatWhenTheLoadBalancingReorders) {
  EXPECT_EQ(NicParams{}.retransmission, "auto");
  EXPECT_EQ(*parse_retransmission("auto"), "auto");
  EXPECT_EQ(resolve_retransmission("auto", "spray"), "selective");
  EXPECT_EQ(resolve_retransmission("auto", "adaptive"), "selective");
  EXPECT_EQ(resolve_retransmission("auto", "ecmp"), "gbn");
  EXPECT_EQ(resolve_retransmission("auto", "flowlet"), "gbn");
  EXPECT_EQ(resolve_retransmission("gbn", "spray"), "gbn");  // an explicit choice stands
  EXPECT_EQ(resolve_retransmission("selective", "ecmp"), "selective");
}

TEST(RetransmissionStrategy, GoBackNResendsEverythingFromTheNakedPsn) {
  auto gbn = make("gbn");
  QueuePair qp = sent_ten();
  gbn->on_nak(qp.rq, 4);
  EXPECT_EQ(qp.rq.next_psn, 4u);
  EXPECT_EQ(qp.rq.cursor, 0u);  // back into the WQE: PSNs 4..9 go again
  EXPECT_TRUE(qp.rq.resend.empty());
  EXPECT_EQ(qp.rq.max_sent, 10u);  // so they count as retransmissions
}

TEST(RetransmissionStrategy, GoBackNGoesBackToUnaOnATimeoutAndMayNakAgain) {
  auto gbn = make("gbn");
  QueuePair qp = sent_ten();
  qp.nak_psn = 2;
  gbn->on_timeout(qp);
  EXPECT_EQ(qp.rq.next_psn, 2u);
  EXPECT_EQ(qp.rq.cursor, 0u);
  EXPECT_EQ(qp.nak_psn, kNoPsn);
}

TEST(RetransmissionStrategy, GoBackNDropsAndNaksEveryPacketPastAHole) {
  auto gbn = make("gbn");
  Responder rs;
  gbn->init(rs);
  rs.epsn = 5;
  for (std::uint32_t psn : {6u, 7u, 30u}) {
    const OutOfOrderAction a = gbn->on_out_of_order(rs, psn, false, 0);
    EXPECT_FALSE(a.place);
    EXPECT_TRUE(a.nak);
  }
  EXPECT_EQ(rs.held, 0u);
}

TEST(RetransmissionStrategy, SelectiveRepeatResendsOnlyWhatIsNamed) {
  auto sr = make("selective");
  QueuePair qp = sent_ten();
  sr->on_nak(qp.rq, 4);
  sr->on_nak(qp.rq, 7);
  sr->on_nak(qp.rq, 4);  // a second NAK for the same PSN adds nothing
  EXPECT_EQ(qp.rq.resend, (std::vector<std::uint32_t>{4, 7}));
  EXPECT_EQ(qp.rq.next_psn, 10u);  // new PSNs continue where they were
  sr->on_timeout(qp);
  EXPECT_EQ(qp.rq.resend, (std::vector<std::uint32_t>{4, 7, 2}));  // una
  std::uint32_t psn = 0;
  std::uint32_t wqe = 0;
  ASSERT_TRUE(qp.rq.pop_resend(psn, wqe));
  EXPECT_EQ(psn, 4u);
}

TEST(RetransmissionStrategy, SelectiveRepeatHoldsAndNaksAtTheThreshold) {
  auto sr = make("selective", 16, 3);
  Responder rs;
  sr->init(rs);
  EXPECT_EQ(rs.window(), 16u);
  rs.epsn = 5;  // PSN 5 is lost
  OutOfOrderAction a = sr->on_out_of_order(rs, 6, false, 0);
  EXPECT_TRUE(a.place);
  EXPECT_FALSE(a.nak);
  a = sr->on_out_of_order(rs, 7, false, 0);
  EXPECT_FALSE(a.nak);
  a = sr->on_out_of_order(rs, 7, false, 0);  // a duplicate: not placed twice
  EXPECT_FALSE(a.place);
  a = sr->on_out_of_order(rs, 8, true, 9);
  EXPECT_TRUE(a.place);
  EXPECT_TRUE(a.nak);  // three held: the hole is a loss
  EXPECT_EQ(rs.held, 3u);
  a = sr->on_out_of_order(rs, 5 + 16, false, 0);  // past the window: dropped, no NAK
  EXPECT_FALSE(a.place);
  EXPECT_FALSE(a.nak);
  EXPECT_EQ(rs.held, 3u);
}

}  // namespace
}  // namespace stepsim::nic
