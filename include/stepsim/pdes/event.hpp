#pragma once
/// The engine's event: a small trivially-copyable record with a fixed-size payload, and the one
/// total order on events.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "stepsim/core/units.hpp"

namespace stepsim::pdes {

/// Global id of a logical process (a server or a switch in the network model).
using LpId = std::uint32_t;
inline constexpr LpId kNoLp = 0xffffffffu;

/// Bytes a model may carry in one event.
inline constexpr std::size_t kEventPayloadBytes = 32;

/// An event: delivered to `dst` at `time`. `src` and `seq` are set by the engine.
struct Event {
  SimTime time;            ///< when it happens at the destination LP
  LpId dst = kNoLp;        ///< destination LP
  LpId src = kNoLp;        ///< sending LP (set by the engine)
  std::uint64_t seq = 0;   ///< per-source sequence number (set by the engine)
  std::uint32_t kind = 0;  ///< model-defined event type
  std::uint32_t aux = 0;   ///< model-defined small field
  alignas(8) std::byte payload[kEventPayloadBytes] = {};

  /// Copies a trivially-copyable payload struct into the event.
  template <class P>
  void set_payload(const P& p) {
    static_assert(std::is_trivially_copyable_v<P>, "event payloads are plain data");
    static_assert(sizeof(P) <= kEventPayloadBytes, "payload larger than kEventPayloadBytes");
    std::memcpy(payload, &p, sizeof(P));
  }
  /// Reads the payload back as `P`.
  template <class P>
  [[nodiscard]] P payload_as() const {
    static_assert(std::is_trivially_copyable_v<P>, "event payloads are plain data");
    static_assert(sizeof(P) <= kEventPayloadBytes, "payload larger than kEventPayloadBytes");
    P p;
    std::memcpy(&p, payload, sizeof(P));
    return p;
  }
};

static_assert(std::is_trivially_copyable_v<Event>, "events cross MPI as bytes");
static_assert(sizeof(Event) == 64, "an event is one cache line");

/// THE event order, defined once: by time, then source LP, then the source's sequence number.
/// (src, seq) is unique per event, so this is a strict total order: an LP processes its events in
/// the same sequence whatever the partition, rank count or thread count.
[[nodiscard]] inline bool event_before(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.src != b.src) return a.src < b.src;
  return a.seq < b.seq;
}

}  // namespace stepsim::pdes
