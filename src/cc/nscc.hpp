#pragma once
// A sender-based window congestion control of the kind of Ultra Ethernet's NSCC (network-signal
// congestion control): every ACK brings two signals, the ECN mark of the packet it answers and that
// packet's round trip, whose excess over the base RTT is its queueing delay. The window moves by
// the quadrant the two signals fall in (mechanism after the UEC 1.0 specification's NSCC and
// Bonato et al., "SMaRTT-REPS", whose control laws NSCC follows; the gains are this model's):
// - ECN and delay above the target: multiplicative decrease by gamma x (delay - target) / delay,
//   at most max_md, at most once per base RTT;
// - ECN, delay below the target: no change (congestion starting, or elsewhere);
// - no ECN, delay above the target: fair increase only (the queue the packet saw is draining);
// - no ECN, delay below the target: proportional increase, alpha x acked x (target - delay) /
//   target, plus the fair increase (fair_increase bytes per window of ACKs).
// A NACK of a trimmed packet is a loss: the window drops by max_md (once per base RTT). The window
// stays within [min_window, max_window_bdp x BDP]; it starts at one BDP (line rate), and the QP
// paces at window / base RTT.

#include "stepsim/cc/congestion_control.hpp"

namespace stepsim::cc {

struct NsccParams {
  SimTime target_qdelay;              ///< target queueing delay; 0: half the base RTT
  double gamma = 0.8;                 ///< multiplicative-decrease gain on (delay - target) / delay
  double max_md = 0.5;                ///< largest fraction one decrease takes
  double alpha = 0.5;                 ///< proportional-increase gain
  Bytes fair_increase = Bytes(4096);  ///< fair increase: bytes per window's worth of ACKs
  double max_window_bdp = 1.5;        ///< window ceiling in BDPs
  Bytes min_window = Bytes(1024);
  SimTime base_rtt;  ///< 0: the NIC's estimate of the QP's path RTT
};

class Nscc final : public CongestionControl {
 public:
  Nscc(const NsccParams& p, const CcPath& path);

  [[nodiscard]] DataRate rate() const override;
  void on_sent(SimTime /*now*/, std::int64_t /*bytes*/) override {}
  /// NSCC reads ECN from the ACKs' echo, not from CNPs.
  void on_cnp(SimTime /*now*/) override {}
  void on_ack(SimTime now, const AckInfo& ack) override;
  void on_nack(SimTime now) override;
  [[nodiscard]] std::int64_t window() const override;
  [[nodiscard]] SimTime next_timer() const override { return SimTime::never(); }
  void on_timer(SimTime /*now*/) override {}

  /// Observable state, for tests.
  [[nodiscard]] double window_bytes() const { return w_; }
  [[nodiscard]] double bdp_bytes() const { return bdp_; }
  [[nodiscard]] SimTime base_rtt() const { return base_; }
  [[nodiscard]] SimTime target() const { return target_; }
  [[nodiscard]] std::uint64_t decreases() const { return decreases_; }

 private:
  void decrease(SimTime now, double fraction);

  NsccParams p_;
  double line_;   // bit/s
  SimTime base_;  // base RTT: the path's estimate, lowered by any shorter sample
  SimTime target_;
  double bdp_;  // line x base RTT, bytes
  double w_max_;
  double w_min_;
  double w_;
  SimTime last_md_ = SimTime::never();
  std::uint64_t decreases_ = 0;
};

}  // namespace stepsim::cc
