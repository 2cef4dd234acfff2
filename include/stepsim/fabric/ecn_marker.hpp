#pragma once
// RED/ECN marking at an egress queue, as DCQCN configures it (Zhu et al., SIGCOMM 2015): the
// probability is 0 up to Kmin, rises linearly to Pmax at Kmax and is 1 above, on the queue the
// packet joins (instantaneous, not averaged). A cell (cell fidelity) is marked when any of the MTU
// packets it stands for would be. Simplification: marking at enqueue, not dequeue.

#include <cmath>
#include <cstdint>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/pdes/rng.hpp"

namespace stepsim::fabric {

/// The marking policy of every egress queue of a fabric.
class EcnMarker {
 public:
  EcnMarker(const EcnParams& p, Bytes mtu)
      : enabled_(p.enabled),
        kmin_(p.kmin.count()),
        kmax_(p.kmax.count()),
        pmax_(p.pmax),
        mtu_(mtu.count()) {}

  /// Probability that a frame of `frame` bytes joining a queue of `queued` bytes is marked.
  [[nodiscard]] double probability(std::int64_t queued, std::int64_t frame) const {
    if (!enabled_ || queued <= kmin_) return 0.0;
    double p = queued >= kmax_ ? 1.0
                               : pmax_ * static_cast<double>(queued - kmin_) /
                                     static_cast<double>(kmax_ - kmin_);
    const std::int64_t packets = packets_in_frame(frame - kRoceHeaderBytes, mtu_);
    if (packets > 1 && p < 1.0) p = 1.0 - std::pow(1.0 - p, static_cast<double>(packets));
    return p;
  }

  /// Draws the marking decision (no draw below Kmin or at probability 1).
  bool mark(std::int64_t queued, std::int64_t frame, pdes::Rng& rng) const {
    if (!enabled_ || queued <= kmin_) return false;
    const double p = probability(queued, frame);
    return p >= 1.0 || rng.uniform() < p;
  }

 private:
  bool enabled_;
  std::int64_t kmin_;
  std::int64_t kmax_;
  double pmax_;
  std::int64_t mtu_;
};

}  // namespace stepsim::fabric
