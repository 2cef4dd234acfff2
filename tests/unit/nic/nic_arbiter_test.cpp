// NicArbiter: round robin between the QPs that fill the send pipeline, and the port's order
// between control, in-network and data packets.
#include "src/nic/nic_arbiter.hpp"
#include "src/nic/rc_wire.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace stepsim::nic {
namespace {

fabric::Packet tagged(std::uint32_t flow, std::uint8_t prio = 3) {
  fabric::Packet p;
  p.transport = fabric::TransportHeader::of(RcHeader{.qp = flow});
  p.prio = prio;
  return p;
}

// Fills `slots` packets from QPs that have `left[qp]` packets each; returns the QPs in the
// order their packets entered the pipeline.
std::vector<std::uint32_t> fill_order(NicArbiter& arb, std::map<std::uint32_t, int>& left,
                                      std::size_t slots, std::vector<std::uint32_t>* idle) {
  std::vector<std::uint32_t> order;
  arb.fill(
      slots,
      [&](std::uint32_t qp, TxSlot& slot) {
        if (left[qp] == 0) return false;
        --left[qp];
        slot.pkt = tagged(qp);
        order.push_back(qp);
        return true;
      },
      [&](std::uint32_t qp) {
        if (idle != nullptr) idle->push_back(qp);
      });
  return order;
}

TEST(NicArbiter, QpsTakeTurnsOnePacketEach) {
  NicArbiter arb;
  std::map<std::uint32_t, int> left{{0, 100}, {1, 100}, {2, 100}};
  for (std::uint32_t qp : {0u, 1u, 2u}) arb.activate(qp);
  const auto order = fill_order(arb, left, 9, nullptr);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(arb.tx.size(), 9u);
}

TEST(NicArbiter, TheTurnCarriesOverBetweenFills) {
  NicArbiter arb;
  std::map<std::uint32_t, int> left{{0, 100}, {1, 100}, {2, 100}};
  for (std::uint32_t qp : {0u, 1u, 2u}) arb.activate(qp);
  EXPECT_EQ(fill_order(arb, left, 2, nullptr), (std::vector<std::uint32_t>{0, 1}));
  arb.tx.pop();  // the port took one: one slot frees
  EXPECT_EQ(fill_order(arb, left, 2, nullptr), (std::vector<std::uint32_t>{2}));
  arb.tx.pop();
  EXPECT_EQ(fill_order(arb, left, 2, nullptr), (std::vector<std::uint32_t>{0}));
}

TEST(NicArbiter, AQpWithNothingLeavesTheListAndTheOthersShareTheSlots) {
  NicArbiter arb;
  std::map<std::uint32_t, int> left{{0, 1}, {1, 100}, {2, 100}};
  for (std::uint32_t qp : {0u, 1u, 2u}) arb.activate(qp);
  std::vector<std::uint32_t> idle;
  const auto order = fill_order(arb, left, 7, &idle);
  EXPECT_EQ(idle, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(arb.active().size(), 2u);
  std::map<std::uint32_t, int> count;
  for (std::uint32_t qp : order) ++count[qp];
  EXPECT_EQ(count[0], 1);
  EXPECT_EQ(count[1], 3);  // the other two split the rest evenly
  EXPECT_EQ(count[2], 3);
  // Every QP empty: the list drains and the fill stops short of the slots.
  NicArbiter b;
  std::map<std::uint32_t, int> none{{4, 0}, {5, 0}};
  b.activate(4);
  b.activate(5);
  std::vector<std::uint32_t> idle2;
  EXPECT_TRUE(fill_order(b, none, 8, &idle2).empty());
  EXPECT_TRUE(b.active().empty());
  EXPECT_EQ(idle2.size(), 2u);
}

TEST(NicArbiter, ControlGoesFirstThenInNetworkAndDataAlternate) {
  NicArbiter arb;
  const SimTime t0 = SimTime::zero();
  for (std::uint32_t i = 0; i < 3; ++i) arb.tx.push(TxSlot{tagged(100 + i), t0});
  for (std::uint32_t i = 0; i < 3; ++i) arb.innet.push(TxSlot{tagged(200 + i), t0});
  arb.ctrl.push(TxSlot{tagged(300), t0});
  auto any = [](const fabric::Packet&) { return true; };
  std::vector<std::uint32_t> flows;
  std::vector<NicArbiter::Source> from;
  fabric::Packet out;
  for (NicArbiter::Source s = arb.take(t0, any, out); s != NicArbiter::Source::kNone;
       s = arb.take(t0, any, out)) {
    flows.push_back(rc_header(out).qp);
    from.push_back(s);
  }
  // Data has the first turn; then the two alternate.
  EXPECT_EQ(flows, (std::vector<std::uint32_t>{300, 100, 200, 101, 201, 102, 202}));
  EXPECT_EQ(from.front(), NicArbiter::Source::kControl);
  EXPECT_EQ(from[1], NicArbiter::Source::kData);
  EXPECT_EQ(from[2], NicArbiter::Source::kInNetwork);
}

TEST(NicArbiter, APacketNotReadyOrHeldByPfcWaitsAndNextReadySaysWhen) {
  NicArbiter arb;
  arb.tx.push(TxSlot{tagged(1, 3), SimTime::ns(100)});
  arb.ctrl.push(TxSlot{tagged(2, 3), SimTime::ns(40)});
  arb.innet.push(TxSlot{tagged(3, 5), SimTime::ns(70)});
  fabric::Packet out;
  auto any = [](const fabric::Packet&) { return true; };
  EXPECT_EQ(arb.take(SimTime::ns(10), any, out), NicArbiter::Source::kNone);
  EXPECT_EQ(arb.next_ready(SimTime::ns(10)), SimTime::ns(40));
  EXPECT_EQ(arb.head(), SimTime::ns(40));  // control and data only
  // Priority 3 paused: at 200 ns only the priority-5 in-network packet may go.
  auto lossy_only = [](const fabric::Packet& p) { return p.prio != 3; };
  EXPECT_EQ(arb.take(SimTime::ns(200), lossy_only, out), NicArbiter::Source::kInNetwork);
  EXPECT_EQ(rc_header(out).qp, 3u);
  EXPECT_EQ(arb.take(SimTime::ns(200), lossy_only, out), NicArbiter::Source::kNone);
  EXPECT_EQ(arb.take(SimTime::ns(200), any, out), NicArbiter::Source::kControl);
  EXPECT_EQ(arb.take(SimTime::ns(200), any, out), NicArbiter::Source::kData);
  EXPECT_TRUE(arb.next_ready(SimTime::ns(200)).is_never());
}

}  // namespace
}  // namespace stepsim::nic
