#pragma once
// In-band network telemetry for HPCC (Li et al., SIGCOMM 2019): each switch stamps its egress
// port's normalized utilization U_j = qlen_j / (B_j T) + txRate_j / B_j (eq. 2) into data packets
// that ask for it, keeping the largest U along the path. Simplification: the switch keeps the
// txRate estimate itself (a linearly decayed busy share over T) instead of the sender deriving it
// from two INT records, and the packet carries only the path's maximum, not per-hop records.

#include <algorithm>
#include <cstdint>

#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"

namespace stepsim::fabric {

/// The transmit-utilization estimate of one egress port.
struct TxUtilization {
  SimTime last;     ///< last transmission
  double util = 0;  ///< busy share over the last window, after `last`

  /// A frame of serialization time `ser` starts at `now`; `window` is the telemetry RTT T.
  void on_transmit(SimTime now, SimTime ser, SimTime window) {
    const double w = static_cast<double>(window.picoseconds());
    const double dt = static_cast<double>((now - last).picoseconds());
    const double busy = static_cast<double>(ser.picoseconds()) / w;
    util = dt >= w ? busy : util * (1.0 - dt / w) + busy;
    last = now;
  }
};

/// Stamps U of an egress port (`backlog` bytes queued, data rate `rate`, transmit utilization
/// `tx_util`, window `rtt`) into `pkt`, keeping the larger of the packet's and the port's.
inline void stamp_utilization(Packet& pkt, std::int64_t backlog, DataRate rate, double tx_util,
                              SimTime rtt) {
  const double bdp = static_cast<double>(rate.bits_per_second()) / 8.0 * rtt.seconds();
  const double u = static_cast<double>(backlog) / bdp + tx_util;
  const double fixed = std::min(65535.0, u * kTelemetryOne);
  pkt.telemetry = std::max(pkt.telemetry, static_cast<std::uint16_t>(fixed));
}

}  // namespace stepsim::fabric
