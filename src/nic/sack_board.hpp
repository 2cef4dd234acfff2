#pragma once
// The unordered transport's (transport.kind uet) reorder-tolerant loss detection, both ends:
// - The receiver acknowledges every data packet. Its ACK carries the cumulative PSN (every PSN
//   below is in memory), the PSN of the packet that asked for it and a 16-bit SACK bitmap of the
//   16 PSNs just below that one (read from the receiver's reorder window), so that a lost ACK's
//   news arrives with the next ones. sack_bits() builds the bitmap; pack_sack()/unpack_sack()
//   put it and the echoed PSN into RcHeader::arg.
// - The sender keeps a SackBoard: a fixed ring, one slot per PSN in flight (the window of PSNs
//   it may have outstanding), with the PSN's first departure, its frame bytes and whether it is
//   known to have arrived (SACKed) or was declared lost. A PSN is declared lost only on evidence
//   that survives reordering: its trimmed header's NACK, or a packet sent more than the reorder
//   window after it has arrived while it has not (the time-based rule of RACK, RFC 8985, on the
//   sender's own departure times), or the retransmission timer. Only holes are resent.
// No allocation after set-up; called per ACK.

#include <cstdint>
#include <vector>

#include "src/nic/rc_wire.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::nic {

/// SACK bitmap width of an ACK.
inline constexpr std::uint32_t kSackBits = 16;
/// The ACK's echo field when it answers a packet too far below the cumulative PSN to encode.
inline constexpr std::uint16_t kNoEcho = 0x8000;

/// RcHeader::arg of an unordered transport's ACK: the echoed PSN as its offset from the
/// cumulative PSN `cack` (a signed 16-bit value, kNoEcho if out of range) and the bitmap.
[[nodiscard]] inline std::uint32_t pack_sack(std::uint32_t cack, std::uint32_t echo,
                                             std::uint16_t bits) {
  const std::int64_t off = static_cast<std::int64_t>(echo) - static_cast<std::int64_t>(cack);
  const std::uint16_t e = off > -32768 && off < 32768
                              ? static_cast<std::uint16_t>(static_cast<std::int16_t>(off))
                              : kNoEcho;
  return std::uint32_t{e} | (std::uint32_t{bits} << 16);
}

/// The echoed PSN of an ACK packed by pack_sack (kNoPsn if none) and its bitmap.
[[nodiscard]] inline std::uint32_t unpack_echo(std::uint32_t cack, std::uint32_t arg) {
  const auto e = static_cast<std::uint16_t>(arg & 0xffffu);
  if (e == kNoEcho) return kNoPsn;
  return static_cast<std::uint32_t>(static_cast<std::int64_t>(cack) + static_cast<std::int16_t>(e));
}
[[nodiscard]] inline std::uint16_t unpack_bits(std::uint32_t arg) {
  return static_cast<std::uint16_t>(arg >> 16);
}

/// The sender's record of the PSNs in flight.
class SackBoard {
 public:
  /// `size` slots (a power of two): the sender keeps at most that many PSNs outstanding.
  void init(std::uint32_t size) { slots_.assign(size, Slot{}); }
  [[nodiscard]] bool active() const { return !slots_.empty(); }
  [[nodiscard]] std::uint32_t size() const { return static_cast<std::uint32_t>(slots_.size()); }

  /// PSN `psn` (`bytes` frame bytes) left the port at `at`; a resend keeps the first departure.
  void on_departure(std::uint32_t psn, std::uint32_t bytes, SimTime at) {
    Slot& s = slot(psn);
    if (s.psn == psn) return;
    s = Slot{psn, bytes, 0, at};
  }
  /// PSN `psn` arrived (a SACK learnt at `now`): its frame bytes if that is news, else 0. Moves
  /// latest() and, for a PSN sent once, max_rtt().
  std::uint32_t sack(std::uint32_t psn, SimTime now) {
    Slot& s = slot(psn);
    if (s.psn != psn || (s.state & kSacked) != 0) return 0;
    if ((s.state & kLost) == 0 && now - s.first > max_rtt_) max_rtt_ = now - s.first;
    s.state |= kSacked;
    if (s.first > latest_) latest_ = s.first;
    return s.bytes;
  }
  /// The largest round trip a SACK of a packet sent once has measured.
  [[nodiscard]] SimTime max_rtt() const { return max_rtt_; }
  /// PSN `psn` is acknowledged cumulatively: its slot is free; the bytes it had been credited
  /// by a SACK (0 if none). Moves latest().
  std::uint32_t release(std::uint32_t psn) {
    Slot& s = slot(psn);
    if (s.psn != psn) return 0;
    const std::uint32_t credited = (s.state & kSacked) != 0 ? s.bytes : 0;
    if (s.first > latest_) latest_ = s.first;
    s.psn = kNoPsn;
    return credited;
  }
  /// PSN `psn` was declared lost (and queued for a resend); false if it already was, or arrived.
  /// `certain`: its trimmed header came back, so the first copy never arrives (otherwise, a
  /// timeout, the first copy may still arrive and its ACK tells nothing of the resend's round
  /// trip: suspect()).
  bool mark_lost(std::uint32_t psn, bool certain) {
    Slot& s = slot(psn);
    if (s.psn != psn) return true;  // not departed yet: the caller resends it as asked
    if ((s.state & kSacked) != 0) return false;
    if (!certain) s.state |= kSuspect;  // also a lost resend's: two copies are on their way
    if ((s.state & kLost) != 0) return false;
    s.state |= kLost;
    return true;
  }
  /// Whether `psn` was resent without certainty that its first copy was lost (Karn's rule: an
  /// ACK of it gives no round trip).
  [[nodiscard]] bool suspect(std::uint32_t psn) const {
    const Slot& s = slots_[psn & (size() - 1)];
    return s.psn == psn && (s.state & kSuspect) != 0;
  }
  /// Whether `psn` is known to have arrived.
  [[nodiscard]] bool sacked(std::uint32_t psn) const {
    const Slot& s = slots_[psn & (size() - 1)];
    return s.psn == psn && (s.state & kSacked) != 0;
  }
  /// The first departure of the latest-sent packet known to have arrived.
  [[nodiscard]] SimTime latest() const { return latest_; }

  /// Declares lost, from `from` (the oldest unacknowledged PSN) up to `max_sent`, each PSN not
  /// known to have arrived whose first departure is more than `reorder` before latest(); calls
  /// lost(psn) for each. The scan stops at the first PSN that may still be on its way (first
  /// departures increase with the PSN) and resumes there: each PSN is examined once.
  template <class Lost>
  void detect(std::uint32_t from, std::uint32_t max_sent, SimTime reorder, Lost&& lost) {
    if (scan_ < from) scan_ = from;
    while (scan_ < max_sent) {
      Slot& s = slot(scan_);
      if (s.psn != scan_) return;  // not on the wire yet (or a READ's PSNs)
      if ((s.state & (kSacked | kLost)) == 0) {
        if (s.first + reorder >= latest_) return;
        s.state |= kLost | kSuspect;
        lost(scan_);
      }
      ++scan_;
    }
  }

  /// Frame bytes of PSNs above the cumulative acknowledgement known to have arrived.
  std::int64_t sacked_bytes = 0;

 private:
  static constexpr std::uint8_t kSacked = 1;
  static constexpr std::uint8_t kLost = 2;
  static constexpr std::uint8_t kSuspect = 4;
  struct Slot {
    std::uint32_t psn = kNoPsn;
    std::uint32_t bytes = 0;
    std::uint8_t state = 0;
    SimTime first;
  };
  Slot& slot(std::uint32_t psn) { return slots_[psn & (size() - 1)]; }

  std::vector<Slot> slots_;
  SimTime latest_ = SimTime::zero() - SimTime::s(1);
  SimTime max_rtt_ = SimTime::zero();
  std::uint32_t scan_ = 0;
};

}  // namespace stepsim::nic
