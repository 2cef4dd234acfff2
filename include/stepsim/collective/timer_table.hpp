#pragma once
// Timers whose payload does not fit the timer's event (nic::AppTimer: the whole step's, which
// name a collective instance by a 64-bit key besides the collective's own timer): a table of
// slots per server holds each pending timer's payload, and the timer's tag is the slot's index. A
// slot is free again once its timer has fired, so a server needs as many slots as it has timers
// pending at once (no heap allocation in steady state), and the payload's fields have their full
// width.

#include <cstdint>
#include <vector>

#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

/// Pending timers' payloads `P`, per server. A server's callbacks run on one thread at a time,
/// so servers' tables are independent.
template <class P>
class TimerTable {
 public:
  explicit TimerTable(std::size_t servers = 0) : servers_(servers) {}
  void resize(std::size_t servers) { servers_.resize(servers); }

  /// Stores `payload` for a timer of `server`; returns the tag the timer carries.
  std::uint32_t put(std::size_t server, const P& payload) {
    Slots& s = servers_[server];
    if (s.free.empty()) {
      s.payloads.push_back(payload);
      return static_cast<std::uint32_t>(s.payloads.size() - 1);
    }
    const std::uint32_t tag = s.free.back();
    s.free.pop_back();
    s.payloads[tag] = payload;
    return tag;
  }
  /// The payload of `server`'s timer `tag`, which has fired (its slot becomes free).
  P take(std::size_t server, std::uint32_t tag) {
    Slots& s = servers_[server];
    STEPSIM_CHECK(tag < s.payloads.size(), "a timer tag no timer was scheduled with");
    s.free.push_back(tag);
    return s.payloads[tag];
  }
  /// Timers of `server` scheduled and not fired yet.
  [[nodiscard]] std::size_t pending(std::size_t server) const {
    return servers_[server].payloads.size() - servers_[server].free.size();
  }

 private:
  struct Slots {
    std::vector<P> payloads;
    std::vector<std::uint32_t> free;
  };
  std::vector<Slots> servers_;
};

}  // namespace stepsim::collective
