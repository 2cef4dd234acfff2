#pragma once
// Who sends next on one NIC port. Two levels: the send pipeline is filled from the QPs that have
// packets, round robin (one packet per QP per turn, so QPs share the port fairly whatever their
// message sizes); the port then takes control packets (ACK, NAK, CNP) first, and alternates
// between in-network (SHARP) packets and RDMA data when both are ready. A packet is "ready" when
// it left the send pipeline; a lossless one may not go while PFC pauses its class.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepsim/core/ring_queue.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"

namespace stepsim::nic {

/// A packet and when it is ready for the port.
struct TxSlot {
  fabric::Packet pkt;
  SimTime ready;
};

class NicArbiter {
 public:
  /// Which queue a packet came from.
  enum class Source : std::uint8_t { kNone, kControl, kInNetwork, kData };

  RingQueue<TxSlot> tx;     ///< RDMA data in the send pipeline, in order
  RingQueue<TxSlot> ctrl;   ///< ACK, NAK, CNP
  RingQueue<TxSlot> innet;  ///< in-network (SHARP) packets

  /// QP `qp` (an index of the caller's) has packets to send; it must not be listed already.
  void activate(std::uint32_t qp) { active_.push_back(qp); }
  [[nodiscard]] const std::vector<std::uint32_t>& active() const { return active_; }

  /// Fills the send pipeline up to `slots` packets from the active QPs, round robin:
  /// next(qp, slot) builds QP `qp`'s next packet into `slot` and returns false if it has none
  /// now; such a QP leaves the list and idle(qp) is called (a later activate brings it back).
  template <class Next, class Idle>
  void fill(std::size_t slots, Next&& next, Idle&& idle);

  /// Takes the packet the port sends now into `out`, if one is ready: control first, then
  /// in-network and data in turn. `allowed(pkt)` is false for a packet PFC holds back.
  template <class Allowed>
  Source take(SimTime now, Allowed&& allowed, fabric::Packet& out);

  /// The earliest time a queued packet that is not ready yet will be (never if none).
  [[nodiscard]] SimTime next_ready(SimTime now) const;
  /// The head of the control and data queues (never if both are empty).
  [[nodiscard]] SimTime head() const;

 private:
  std::vector<std::uint32_t> active_;  ///< QPs with packets to send
  std::uint32_t rr_ = 0;               ///< whose turn it is in active_
  bool innet_turn_ = false;            ///< round robin between innet and tx
};

template <class Next, class Idle>
void NicArbiter::fill(std::size_t slots, Next&& next, Idle&& idle) {
  while (tx.size() < slots && !active_.empty()) {
    const auto count = static_cast<std::uint32_t>(active_.size());
    if (rr_ >= count) rr_ = 0;
    const std::uint32_t qp = active_[rr_];
    TxSlot slot;
    if (next(qp, slot)) {
      tx.push(slot);
      rr_ = (rr_ + 1) % count;
      continue;
    }
    active_[rr_] = active_.back();
    active_.pop_back();
    idle(qp);
  }
}

template <class Allowed>
NicArbiter::Source NicArbiter::take(SimTime now, Allowed&& allowed, fabric::Packet& out) {
  auto ready = [&](const RingQueue<TxSlot>& q) {
    return !q.empty() && q.front().ready <= now && allowed(q.front().pkt);
  };
  if (ready(ctrl)) {
    out = ctrl.pop().pkt;
    return Source::kControl;
  }
  const bool innet_ready = ready(innet);
  const bool tx_ready = ready(tx);
  if (innet_ready && (innet_turn_ || !tx_ready)) {
    out = innet.pop().pkt;
    innet_turn_ = false;
    return Source::kInNetwork;
  }
  if (tx_ready) {
    innet_turn_ = true;
    out = tx.pop().pkt;
    return Source::kData;
  }
  return Source::kNone;
}

// --- inline: called per packet -------------------------------------------------------------

inline SimTime NicArbiter::next_ready(SimTime now) const {
  SimTime head = SimTime::never();
  for (const RingQueue<TxSlot>* q : {&ctrl, &tx, &innet}) {
    if (!q->empty() && q->front().ready > now) head = std::min(head, q->front().ready);
  }
  return head;
}

inline SimTime NicArbiter::head() const {
  return std::min(tx.empty() ? SimTime::never() : tx.front().ready,
                  ctrl.empty() ? SimTime::never() : ctrl.front().ready);
}

}  // namespace stepsim::nic
