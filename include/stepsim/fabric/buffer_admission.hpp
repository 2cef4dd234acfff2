#pragma once
// Buffer admission of a switch with one shared buffer (Choudhury & Hahne's dynamic threshold for
// the lossy class, as in Broadcom's shared-buffer switches): a lossy packet is admitted while its
// egress backlog stays below alpha x the free buffer; a lossless packet while the bytes held from
// its ingress port stay within XOFF + that port's PFC headroom, and the shared buffer has room.
// Simplification: no per-port reserved (guaranteed) buffer.

#include <cstdint>

namespace stepsim::fabric {

/// The admission decision for one packet.
enum class Admission : std::uint8_t {
  kAdmit,
  kNoHeadroom,  ///< lossless: the ingress port's XOFF + headroom is used up
  kNoBuffer,    ///< the shared buffer (or the lossy dynamic threshold) has no room
};

/// The shared-buffer policy of every switch of a fabric.
class BufferAdmission {
 public:
  BufferAdmission(std::int64_t buffer, double dt_alpha, std::int64_t xoff)
      : buffer_(buffer), alpha_(dt_alpha), xoff_(xoff) {}

  /// Lossless: `ingress` bytes already held from the packet's ingress port with `headroom`.
  [[nodiscard]] Admission lossless(std::int64_t bytes, std::int64_t ingress, std::int64_t headroom,
                                   std::int64_t used) const {
    if (ingress + bytes > xoff_ + headroom) return Admission::kNoHeadroom;
    if (used + bytes > buffer_) return Admission::kNoBuffer;
    return Admission::kAdmit;
  }

  /// Lossy: `egress` bytes of the lossy class already queued at the packet's egress port.
  [[nodiscard]] Admission lossy(std::int64_t bytes, std::int64_t egress, std::int64_t used) const {
    const std::int64_t free = buffer_ - used;
    if (free < bytes || static_cast<double>(egress + bytes) > alpha_ * static_cast<double>(free)) {
      return Admission::kNoBuffer;
    }
    return Admission::kAdmit;
  }

  [[nodiscard]] std::int64_t buffer() const { return buffer_; }

 private:
  std::int64_t buffer_;
  double alpha_;
  std::int64_t xoff_;
};

}  // namespace stepsim::fabric
