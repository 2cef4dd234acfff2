#pragma once
// The state of one RC queue pair endpoint, in three parts: the requester (send queue, PSNs,
// acknowledgements, what must be resent), the responder (expected PSN, ACK coalescing, the
// reorder buffer of selective repeat, READ responses to send) and the completion queue. Plain
// state with the bookkeeping that needs no clock, the NIC or events (those are RcTransport's), so
// each transition can be unit tested alone.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "src/nic/rc_wire.hpp"
#include "src/nic/sack_board.hpp"
#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/core/ring_queue.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/nic/rdma_stats.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

/// A posted work request inside the NIC.
struct Wqe {
  WorkRequest wr;
  std::uint32_t first_psn = 0;
  std::uint32_t npkts = 1;
  SimTime posted;
  SimTime ready;  ///< reached the NIC (doorbell, context, WQE fetch done)
  /// trace.sent_ps: its first packet on the wire (the send completion's first_byte).
  MessageTrace trace;
  // Its send completion's counters: MTU packets sent (a cell counts the packets it stands for),
  // retransmissions included, and those sent again. A READ counts its request.
  std::uint32_t packets = 0;
  std::uint32_t retransmitted = 0;

  [[nodiscard]] std::uint32_t end_psn() const { return first_psn + npkts; }
  /// Payload bytes of PSN `psn` with frames of `mtu` payload bytes.
  [[nodiscard]] std::int64_t payload_of(std::uint32_t psn, std::int64_t mtu) const;
  /// Frame bytes of PSN `psn`: payload and headers; a READ has one request frame, then nothing.
  [[nodiscard]] std::int64_t frame_of(std::uint32_t psn, std::int64_t mtu) const;
};

/// READ responses the responder owes, in the requester's PSN space.
struct ReadJob {
  std::uint32_t first = 0;  ///< PSN of the first response
  std::uint32_t next = 0;   ///< next response to send
  std::uint32_t end = 0;    ///< one past the last
  std::int64_t bytes = 0;   ///< bytes requested from `first`
};

/// The send side: the send queue and its PSNs. PSNs are 32-bit here (24-bit on the wire; a step
/// never wraps them).
struct Requester {
  RingQueue<Wqe> sq;
  std::uint32_t cursor = 0;  ///< index in sq of the WQE holding next_psn
  std::uint32_t next_wqe_psn = 0;
  std::uint32_t next_psn = 0;
  std::uint32_t una = 0;              ///< oldest unacknowledged PSN
  std::uint32_t max_sent = 0;         ///< one past the highest PSN sent
  std::vector<std::uint32_t> resend;  ///< selective repeat: PSNs to send again, in order
  SimTime rto_deadline = SimTime::never();
  SimTime rto_at = SimTime::never();  ///< the pending timeout event
  int retries = 0;
  SimTime fetch_issued = SimTime::never();  ///< last WQE fetch (prefetch batches)
  SimTime fetch_done;
  int fetch_batch = 0;
  SimTime last_ready = SimTime::zero() - SimTime::ms(1);  ///< the previous WQE's (qp_in_order)
  std::int64_t sent_bytes = 0;                            ///< frame bytes of new PSNs sent
  std::int64_t acked_bytes = 0;                           ///< frame bytes of PSNs acknowledged
  /// transport.kind uet: transmissions so far, each with its own entropy (sprayed by ECMP).
  std::uint32_t sprayed = 0;
  /// transport.kind uet: the PSNs in flight, what the SACKs say of them (sack_board.hpp), and
  /// the reorder window: a hole is lost once a packet sent this much later has arrived
  /// (transport.reorder_window, or if 0 the largest round trip measured, at least base_rtt).
  SackBoard board;
  SimTime reorder_window;
  SimTime base_rtt;
  [[nodiscard]] SimTime reorder() const {
    return reorder_window > SimTime::zero() ? reorder_window : std::max(base_rtt, board.max_rtt());
  }
  /// CcNeeds::ack_echo: when each PSN last left and its frame bytes, in a ring by PSN (sized at
  /// set-up; an entry overwritten by a later PSN gives no sample).
  struct Departure {
    std::uint32_t psn = kNoPsn;
    std::uint32_t bytes = 0;
    SimTime at;
  };
  std::vector<Departure> departures;
  void note_departure(std::uint32_t psn, std::uint32_t bytes, SimTime at) {
    departures[psn & (departures.size() - 1)] = Departure{psn, bytes, at};
  }
  /// The departure of `psn`, or null if the ring holds another PSN there.
  [[nodiscard]] const Departure* departure(std::uint32_t psn) const {
    const Departure& d = departures[psn & (departures.size() - 1)];
    return d.psn == psn ? &d : nullptr;
  }

  /// Gives `w` its packets (frames of `mtu` payload bytes, at least one) and its first PSN.
  void number(Wqe& w, std::int64_t mtu);
  /// Index in sq of the WQE that holds `psn` (sq.size() if none).
  [[nodiscard]] std::uint32_t seek(std::uint32_t psn) const;
  /// Go-Back-N: the next packet sent is `psn` again, and everything after it.
  void go_back(std::uint32_t psn) {
    next_psn = psn;
    cursor = seek(psn);
  }
  /// Selective repeat: `psn` is sent again (once, however often it is asked for).
  void queue_resend(std::uint32_t psn);
  /// Takes the next PSN of the resend list still unacknowledged and in the queue, with its WQE's
  /// index; false if none is left.
  bool pop_resend(std::uint32_t& psn, std::uint32_t& wqe);
  /// Whether a WQE not yet fully sent is queued.
  [[nodiscard]] bool has_new() const { return cursor < sq.size(); }
  /// A cumulative acknowledgement of every PSN below `psn` (clamped to max_sent): counts the
  /// acknowledged frame bytes, calls done(wqe) for each WQE it completes before removing it, and
  /// moves next_psn past acknowledged PSNs. False if it acknowledged nothing new.
  template <class Done>
  bool acknowledge(std::uint32_t psn, std::int64_t mtu, Done&& done);

 private:
  void after_acknowledge();
};

/// The receive side.
struct Responder {
  std::uint32_t epsn = 0;  ///< expected PSN
  int since_ack = 0;       ///< in-order packets since the last ACK
  std::uint32_t held = 0;  ///< selective repeat: PSNs held past the hole
  /// Reorder ring: 0 empty, 1 held, 2 held + ends a message; kHeldCe: it arrived CE-marked.
  std::vector<std::uint8_t> ooo;
  std::vector<std::uint32_t> ooo_imm;  ///< ... and the immediate data of a message's last packet
  /// Held packets that carry less than a whole segment or end a flow (the rest carry exactly
  /// one segment): their payload, so that the message's receive completion counts it.
  struct HeldTail {
    std::uint32_t psn = 0;
    std::uint32_t payload = 0;
    bool last = false;
  };
  std::vector<HeldTail> tails;
  std::uint32_t recv_seq = 0;
  std::int64_t recv_bytes = 0;  ///< payload of the message being received
  std::uint32_t recv_ecn = 0;   ///< its packets that arrived CE-marked (a cell counts once)
  cc::CnpGenerator cnp{SimTime::us(50)};
  std::vector<ReadJob> reads;

  /// A reorder buffer of `window` PSNs (a power of two) past the expected one.
  void hold_window(std::uint32_t window);
  [[nodiscard]] std::uint32_t window() const { return static_cast<std::uint32_t>(ooo.size()); }
  /// Keeps PSN `psn` (past epsn, inside the window); false if it was held already.
  bool hold(std::uint32_t psn, bool completes_message, std::uint32_t imm);
  /// The SACK bitmap of an ACK answering `psn`: bit i set if PSN psn - 1 - i is held past the
  /// hole (PSNs below epsn are acknowledged cumulatively).
  [[nodiscard]] std::uint16_t sack_bits(std::uint32_t psn) const {
    std::uint16_t bits = 0;
    if (ooo.empty()) return bits;
    for (std::uint32_t i = 0; i < kSackBits && i + 1 <= psn; ++i) {
      const std::uint32_t q = psn - 1 - i;
      if (q <= epsn) break;  // epsn itself is the hole
      if (q - epsn < window() && ooo[q & (window() - 1)] != 0) {
        bits = static_cast<std::uint16_t>(bits | (1u << i));
      }
    }
    return bits;
  }
  /// The held PSN `psn` arrived CE-marked (its message's receive completion counts it).
  void mark_held_ce(std::uint32_t psn) { ooo[psn & (window() - 1)] |= kHeldCe; }
  /// Takes the held packet at epsn, if any (the caller then consumes it and moves epsn on).
  bool take_held(bool& completes_message, std::uint32_t& imm, bool& ce);
  static constexpr std::uint8_t kHeldCe = 4;
  /// The held PSN `psn` carries `payload` bytes and `last`: it ends its flow (call only for a
  /// packet shorter than a segment or that ends a flow, after hold() placed it).
  void note_tail(std::uint32_t psn, std::int64_t payload, bool last) {
    tails.push_back(HeldTail{psn, static_cast<std::uint32_t>(payload), last});
  }
  /// The payload of the held PSN `psn` being consumed (`segment` unless noted) and, in `last`,
  /// whether it ends its flow; forgets the note.
  std::int64_t take_tail(std::uint32_t psn, std::int64_t segment, bool& last);
  /// The first READ with responses left to send, or null.
  [[nodiscard]] ReadJob* next_read();
  [[nodiscard]] bool has_reads() const;
  /// A READ request for PSNs [psn, psn + packets): resumes a READ it repeats, else queues it.
  void start_read(std::uint32_t psn, std::uint32_t packets, std::int64_t bytes);
  void erase_finished_reads();
};

/// Completions waiting for the application, at most `depth`, and those on their way (the NIC's
/// PCIe write of the CQE), kept in slots until they become visible: the event that makes one
/// visible names its slot (completions of one endpoint may become visible out of order).
class CompletionQueue {
 public:
  void set_depth(std::size_t depth) { depth_ = depth; }
  [[nodiscard]] bool full() const { return q_.size() >= depth_; }
  [[nodiscard]] std::size_t size() const { return q_.size(); }
  /// Appends `c`; the caller checks full() first (an overflow is the QP's error).
  void push(const Completion& c) { q_.push(c); }
  /// Takes up to out.size() completions, oldest first; returns how many.
  std::size_t poll(std::span<Completion> out);
  /// Keeps `c` until it becomes visible; its slot. Slots are reused: the table grows only to the
  /// most completions ever on their way at once.
  std::uint32_t stage(const Completion& c);
  /// Takes the completion kept in `slot` out (the slot is free again).
  Completion unstage(std::uint32_t slot);
  /// Completions on their way.
  [[nodiscard]] std::size_t staged() const { return staged_.size() - free_.size(); }

 private:
  RingQueue<Completion> q_;
  std::vector<Completion> staged_;
  std::vector<std::uint32_t> free_;  ///< free slots of staged_
  std::size_t depth_ = 16384;
};

/// One endpoint of a connection on its server: both sides of the transport, its congestion
/// control and rate limiter, its CQ and counters.
struct QueuePair {
  std::uint32_t id = 0;      ///< global endpoint id
  std::uint32_t server = 0;  ///< local server index
  std::uint32_t nic = 0;     ///< port index within the server
  topology::PortId peer_nic = 0;
  std::uint32_t hash = 0;  ///< 5-tuple hash of the packets it sends
  std::uint8_t prio = 3;
  QpState state = QpState::kReset;
  QpError error = QpError::kNone;
  std::unique_ptr<cc::CongestionControl> cc;
  bool paced = false;  ///< the rate limiter was below line rate at the last packet
  /// The last packet: when it left and its wire bytes. The next may leave once those bytes have
  /// passed at the rate the congestion control gives *now* (a rate limiter, as the NIC's: a rate
  /// raised while the QP waits shortens the wait instead of the old rate holding it back).
  SimTime last_sent;
  std::int64_t last_wire_bytes = 0;
  SimTime pace_at = SimTime::never();
  SimTime cc_at = SimTime::never();
  bool active = false;  ///< in its NIC's list of endpoints with packets to send
  /// The last PSN NAKed. Both sides use it: the responder sends one NAK per hole of its requests;
  /// the requester re-requests a READ's hole once. (One field, as the outputs were made with.)
  std::uint32_t nak_psn = kNoPsn;
  Requester rq;
  Responder rs;
  CompletionQueue cq;
  QpStats stats;
  MessageTrace sent_trace;
  MessageTrace recv_trace;

  /// Connection set-up: RESET -> INIT -> RTR -> RTS (instant; the step starts connected).
  void bring_up();
  /// Whether it has a packet to send (a READ response, a resend or a new PSN).
  [[nodiscard]] bool has_more() const {
    return !rq.resend.empty() || rs.has_reads() || rq.has_new();
  }
  /// Moves to ERROR for `why`: stops the timer and every pending send; flush(wqe, first) is
  /// called for each queued WQE, oldest first (`first`: the one that failed).
  template <class Flush>
  void fail(QpError why, Flush&& flush);
};

// --- templates ---------------------------------------------------------------------------------

template <class Done>
bool Requester::acknowledge(std::uint32_t psn, std::int64_t mtu, Done&& done) {
  if (psn <= una) return false;
  psn = std::min(psn, max_sent);
  if (psn <= una) return false;
  while (una < psn && !sq.empty()) {
    Wqe& w = sq.front();
    const std::uint32_t end = std::min(psn, w.end_psn());
    for (std::uint32_t q = una; q < end; ++q) acked_bytes += w.frame_of(q, mtu);
    una = end;
    if (una < w.end_psn()) break;
    done(static_cast<const Wqe&>(w));
    sq.pop();
    if (cursor > 0) --cursor;
  }
  after_acknowledge();
  return true;
}

template <class Flush>
void QueuePair::fail(QpError why, Flush&& flush) {
  state = QpState::kError;
  error = why;
  rq.rto_deadline = SimTime::never();
  bool first = true;
  while (!rq.sq.empty()) {
    const Wqe w = rq.sq.pop();
    flush(w, first);
    first = false;
  }
  rq.cursor = 0;
  rq.resend.clear();
  rs.reads.clear();
}

// --- inline: called per packet -------------------------------------------------------------

inline std::int64_t Wqe::payload_of(std::uint32_t psn, std::int64_t mtu) const {
  const std::int64_t k = psn - first_psn;
  return std::clamp<std::int64_t>(wr.bytes - k * mtu, 0, mtu);
}

inline std::int64_t Wqe::frame_of(std::uint32_t psn, std::int64_t mtu) const {
  if (wr.opcode == Opcode::kRead) {
    return psn == first_psn ? fabric::kRoceHeaderBytes + kReadReqHeader : 0;
  }
  return payload_of(psn, mtu) + fabric::kRoceHeaderBytes;
}

inline std::uint32_t Requester::seek(std::uint32_t psn) const {
  std::uint32_t i = 0;
  while (i < sq.size() && psn >= sq[i].end_psn()) ++i;
  return i;
}

inline bool Requester::pop_resend(std::uint32_t& psn, std::uint32_t& wqe) {
  while (!resend.empty()) {
    psn = resend.front();
    resend.erase(resend.begin());
    wqe = seek(psn);
    // else acknowledged meanwhile (uet: or a SACK reported its first copy; the oldest
    // unacknowledged PSN is resent all the same, as the timer's probe for a fresh cumulative
    // acknowledgement).
    if (psn >= una && wqe < sq.size() && !(board.active() && psn != una && board.sacked(psn))) {
      return true;
    }
  }
  return false;
}

inline bool Responder::take_held(bool& completes_message, std::uint32_t& imm, bool& ce) {
  if (held == 0) return false;
  const std::uint32_t i = epsn & (window() - 1);
  if (ooo[i] == 0) return false;
  completes_message = (ooo[i] & ~kHeldCe) == 2;
  ce = (ooo[i] & kHeldCe) != 0;
  imm = ooo_imm[i];
  ooo[i] = 0;
  --held;
  return true;
}

inline std::int64_t Responder::take_tail(std::uint32_t psn, std::int64_t segment, bool& last) {
  for (std::size_t i = 0; i < tails.size(); ++i) {
    if (tails[i].psn != psn) continue;
    const HeldTail t = tails[i];
    tails[i] = tails.back();
    tails.pop_back();
    last = t.last;
    return t.payload;
  }
  last = false;
  return segment;
}

inline ReadJob* Responder::next_read() {
  for (ReadJob& j : reads) {
    if (j.next < j.end) return &j;
  }
  return nullptr;
}

inline bool Responder::has_reads() const {
  return std::any_of(reads.begin(), reads.end(), [](const ReadJob& j) { return j.next < j.end; });
}

}  // namespace stepsim::nic
