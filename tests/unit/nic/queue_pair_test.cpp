// QueuePair: the requester's PSN bookkeeping, the responder's reorder buffer and READ jobs, the
// completion queue, and the QP's state transitions (bring-up, ERROR).
#include "src/nic/queue_pair.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace stepsim::nic {
namespace {

constexpr std::int64_t kMtu = 4096;

// Posts a WQE of `bytes` on `rq` (numbered as the NIC would).
Wqe& post(Requester& rq, std::int64_t bytes, Opcode op = Opcode::kWrite, std::uint64_t id = 0) {
  Wqe w;
  w.wr.opcode = op;
  w.wr.bytes = bytes;
  w.wr.wr_id = id;
  rq.number(w, kMtu);
  rq.sq.push(w);
  return rq.sq[rq.sq.size() - 1];
}

// Marks every PSN of the queue sent, as the send pipeline would.
void send_all(Requester& rq) {
  rq.max_sent = rq.next_wqe_psn;
  rq.next_psn = rq.next_wqe_psn;
  rq.cursor = static_cast<std::uint32_t>(rq.sq.size());
  for (std::size_t i = 0; i < rq.sq.size(); ++i) {
    for (std::uint32_t q = rq.sq[i].first_psn; q < rq.sq[i].end_psn(); ++q) {
      rq.sent_bytes += rq.sq[i].frame_of(q, kMtu);
    }
  }
}

TEST(QueuePair, WqesGetConsecutivePsnsOnePerMtuAndAtLeastOne) {
  Requester rq;
  EXPECT_EQ(post(rq, 10'000).npkts, 3u);
  EXPECT_EQ(post(rq, 0).npkts, 1u);  // a zero-byte WRITE still sends one packet
  EXPECT_EQ(post(rq, 4096).npkts, 1u);
  EXPECT_EQ(rq.sq[0].first_psn, 0u);
  EXPECT_EQ(rq.sq[1].first_psn, 3u);
  EXPECT_EQ(rq.sq[2].first_psn, 4u);
  EXPECT_EQ(rq.next_wqe_psn, 5u);
  EXPECT_EQ(rq.seek(2), 0u);
  EXPECT_EQ(rq.seek(3), 1u);
  EXPECT_EQ(rq.seek(4), 2u);
  EXPECT_EQ(rq.seek(5), 3u);  // none: sq.size()
}

TEST(QueuePair, FramesCarryTheHeaderAndAReadHasOneRequestFrame) {
  Requester rq;
  const Wqe& w = post(rq, 10'000);
  EXPECT_EQ(w.payload_of(0, kMtu), 4096);
  EXPECT_EQ(w.payload_of(2, kMtu), 10'000 - 2 * 4096);
  EXPECT_EQ(w.frame_of(2, kMtu), 10'000 - 2 * 4096 + fabric::kRoceHeaderBytes);
  const Wqe& r = post(rq, 10'000, Opcode::kRead);
  EXPECT_EQ(r.frame_of(r.first_psn, kMtu), fabric::kRoceHeaderBytes + 16);  // with its RETH
  EXPECT_EQ(r.frame_of(r.first_psn + 1, kMtu), 0);
}

TEST(QueuePair, ACumulativeAckCompletesWholeWqesOnlyAndCountsTheirBytes) {
  Requester rq;
  post(rq, 8192, Opcode::kWrite, 11);  // PSNs 0, 1
  post(rq, 8192, Opcode::kWrite, 12);  // PSNs 2, 3
  send_all(rq);
  std::vector<std::uint64_t> done;
  auto on_done = [&](const Wqe& w) { done.push_back(w.wr.wr_id); };
  EXPECT_TRUE(rq.acknowledge(3, kMtu, on_done));  // PSNs 0..2: the first WQE only
  EXPECT_EQ(done, (std::vector<std::uint64_t>{11}));
  EXPECT_EQ(rq.una, 3u);
  EXPECT_EQ(rq.sq.size(), 1u);
  EXPECT_EQ(rq.acked_bytes, 3 * (4096 + fabric::kRoceHeaderBytes));
  EXPECT_FALSE(rq.acknowledge(2, kMtu, on_done));   // old news
  EXPECT_TRUE(rq.acknowledge(100, kMtu, on_done));  // clamped to what was sent
  EXPECT_EQ(done, (std::vector<std::uint64_t>{11, 12}));
  EXPECT_EQ(rq.una, 4u);
  EXPECT_EQ(rq.acked_bytes, rq.sent_bytes);
  EXPECT_TRUE(rq.sq.empty());
  EXPECT_EQ(rq.cursor, 0u);  // the cursor moved down with the popped WQEs
}

TEST(QueuePair, AnAckPastTheResumePointMovesNextPsnAndDropsStaleResends) {
  Requester rq;
  post(rq, 8 * 4096);
  send_all(rq);
  rq.retries = 3;
  rq.go_back(2);  // as after a NAK for PSN 2
  rq.queue_resend(1);
  rq.queue_resend(6);
  rq.queue_resend(6);  // once only
  EXPECT_EQ(rq.resend, (std::vector<std::uint32_t>{1, 6}));
  rq.acknowledge(5, kMtu, [](const Wqe&) {});
  EXPECT_EQ(rq.next_psn, 5u);  // nothing below una is sent again
  EXPECT_EQ(rq.cursor, 0u);
  EXPECT_EQ(rq.resend, (std::vector<std::uint32_t>{6}));
  EXPECT_EQ(rq.retries, 0);  // progress resets the retry count
}

TEST(QueuePair, PopResendSkipsPsnsAcknowledgedMeanwhile) {
  Requester rq;
  post(rq, 8 * 4096);
  send_all(rq);
  rq.queue_resend(1);
  rq.queue_resend(5);
  rq.una = 3;  // PSNs 0..2 acknowledged since
  std::uint32_t psn = 0;
  std::uint32_t wqe = 9;
  EXPECT_TRUE(rq.pop_resend(psn, wqe));
  EXPECT_EQ(psn, 5u);
  EXPECT_EQ(wqe, 0u);
  EXPECT_FALSE(rq.pop_resend(psn, wqe));
}

TEST(QueuePair, TheReorderBufferHoldsEachPsnOnceAndReleasesInOrder) {
  Responder rs;
  rs.hold_window(16);
  rs.epsn = 10;
  EXPECT_TRUE(rs.hold(12, false, 0));
  EXPECT_FALSE(rs.hold(12, false, 0));  // a duplicate
  EXPECT_TRUE(rs.hold(11, true, 77));
  rs.mark_held_ce(11);
  EXPECT_EQ(rs.held, 2u);
  bool completes = false;
  bool ce = false;
  std::uint32_t imm = 0;
  EXPECT_FALSE(rs.take_held(completes, imm, ce));  // the hole at 10 is still open
  ++rs.epsn;                                       // 10 arrives and is consumed
  ASSERT_TRUE(rs.take_held(completes, imm, ce));
  EXPECT_TRUE(completes);  // the CE mark does not hide the end of the message
  EXPECT_TRUE(ce);
  EXPECT_EQ(imm, 77u);
  ++rs.epsn;
  ASSERT_TRUE(rs.take_held(completes, imm, ce));
  EXPECT_FALSE(completes);
  EXPECT_FALSE(ce);
  ++rs.epsn;
  EXPECT_FALSE(rs.take_held(completes, imm, ce));
  EXPECT_EQ(rs.held, 0u);
}

TEST(QueuePair, AReadRequestQueuesResponsesAndARepeatResumesThem) {
  Responder rs;
  rs.start_read(0, 4, 4 * 4096);
  EXPECT_EQ(rs.epsn, 4u);
  ASSERT_NE(rs.next_read(), nullptr);
  rs.next_read()->next = 3;       // three responses sent
  rs.start_read(1, 3, 3 * 4096);  // the requester re-asks from PSN 1
  EXPECT_EQ(rs.reads.size(), 1u);
  EXPECT_EQ(rs.next_read()->next, 1u);
  EXPECT_EQ(rs.epsn, 4u);
  rs.next_read()->next = 4;
  EXPECT_FALSE(rs.has_reads());
  rs.erase_finished_reads();
  EXPECT_TRUE(rs.reads.empty());
}

TEST(QueuePair, TheCompletionQueueIsFifoAndFullAtItsDepth) {
  CompletionQueue cq;
  cq.set_depth(2);
  Completion c;
  c.wr_id = 1;
  cq.push(c);
  EXPECT_FALSE(cq.full());
  c.wr_id = 2;
  cq.push(c);
  EXPECT_TRUE(cq.full());
  Completion out[4];
  ASSERT_EQ(cq.poll(out), 2u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[1].wr_id, 2u);
  EXPECT_EQ(cq.poll(out), 0u);
}

TEST(QueuePair, StagedCompletionsComeBackFromTheirSlotsInAnyOrderAndSlotsAreReused) {
  CompletionQueue cq;
  Completion c;
  c.wr_id = 1;
  const std::uint32_t a = cq.stage(c);
  c.wr_id = 2;
  const std::uint32_t b = cq.stage(c);
  EXPECT_NE(a, b);
  EXPECT_EQ(cq.staged(), 2u);
  EXPECT_EQ(cq.unstage(b).wr_id, 2u);  // the later one becomes visible first
  c.wr_id = 3;
  EXPECT_EQ(cq.stage(c), b);  // its slot is reused
  EXPECT_EQ(cq.unstage(a).wr_id, 1u);
  EXPECT_EQ(cq.unstage(b).wr_id, 3u);
  EXPECT_EQ(cq.staged(), 0u);
}

TEST(QueuePair, BringUpGoesThroughInitAndRtrToRts) {
  QueuePair qp;
  EXPECT_EQ(qp.state, QpState::kReset);
  qp.bring_up();
  EXPECT_EQ(qp.state, QpState::kRts);
  EXPECT_FALSE(qp.has_more());
  post(qp.rq, 100);
  EXPECT_TRUE(qp.has_more());
}

TEST(QueuePair, FailingFlushesTheQueueFailedFirstAndStopsEverySend) {
  QueuePair qp;
  qp.bring_up();
  post(qp.rq, 4096, Opcode::kWrite, 1);
  post(qp.rq, 4096, Opcode::kWrite, 2);
  post(qp.rq, 4096, Opcode::kWrite, 3);
  qp.rq.queue_resend(0);
  qp.rs.start_read(0, 2, 8192);
  qp.rq.rto_deadline = SimTime::us(50);
  std::vector<std::pair<std::uint64_t, bool>> flushed;
  qp.fail(QpError::kRetryExceeded,
          [&](const Wqe& w, bool first) { flushed.emplace_back(w.wr.wr_id, first); });
  EXPECT_EQ(qp.state, QpState::kError);
  EXPECT_EQ(qp.error, QpError::kRetryExceeded);
  EXPECT_EQ(flushed,
            (std::vector<std::pair<std::uint64_t, bool>>{{1, true}, {2, false}, {3, false}}));
  EXPECT_FALSE(qp.has_more());
  EXPECT_TRUE(qp.rq.rto_deadline.is_never());
  EXPECT_FALSE(transition_allowed(qp.state, QpState::kRts));  // ERROR goes only to RESET
  EXPECT_TRUE(transition_allowed(qp.state, QpState::kReset));
}

}  // namespace
}  // namespace stepsim::nic
