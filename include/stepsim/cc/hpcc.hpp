#pragma once
/// HPCC's sender (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, section 3.3,
/// Algorithm 1): a window computed from the in-network telemetry (INT) that each ACK carries,
/// multiplicative towards the target utilization eta, additive for up to max_stage rounds; the QP
/// paces at W / T. The simulator's INT is one number per ACK: each switch computes its own
/// qlen / (B T) + txRate / B and the ACK carries the maximum over the hops (see src/cc/hpcc.cpp).

#include "stepsim/cc/congestion_control.hpp"

namespace stepsim::cc {

class Hpcc final : public CongestionControl {
 public:
  /// Floor of the window, in bytes (about one MTU: a QP always has a packet it may send).
  static constexpr double kMinWindowBytes = 1000;

  Hpcc(const HpccParams& p, const CcPath& path);

  /// W / T, never above the line rate.
  [[nodiscard]] DataRate rate() const override;
  void on_sent(SimTime now, std::int64_t bytes) override;
  /// HPCC does not use ECN: CNPs are ignored.
  void on_cnp(SimTime /*now*/) override {}
  /// Algorithm 1's NewAck: EWMA of the utilization, then ComputeWind (Wc moves once per round:
  /// when `ack.acked` passes what was sent at the last update). ACKs without INT are ignored.
  void on_ack(SimTime now, const AckInfo& ack) override;
  /// W, rounded to whole bytes.
  [[nodiscard]] std::int64_t window() const override;
  [[nodiscard]] SimTime next_timer() const override { return SimTime::never(); }
  void on_timer(SimTime /*now*/) override {}

  /// Observable state, for tests and traces.
  [[nodiscard]] double window_bytes() const { return w_; }
  [[nodiscard]] double reference_window_bytes() const { return wc_; }
  [[nodiscard]] double initial_window_bytes() const { return w_init_; }
  [[nodiscard]] double additive_bytes() const { return w_ai_; }
  [[nodiscard]] double utilization() const { return u_; }
  [[nodiscard]] int stage() const { return inc_stage_; }
  [[nodiscard]] std::int64_t last_update_seq() const { return last_update_seq_; }
  [[nodiscard]] std::int64_t bytes_sent() const { return snd_nxt_; }
  [[nodiscard]] SimTime base_rtt() const { return t_; }

 private:
  double compute_window(bool update_wc);

  HpccParams p_;
  double line_;     // bit/s
  SimTime t_;       // T
  double t_s_;      // T in seconds
  double w_init_;   // line_ x T, bytes
  double w_ai_;     // W_AI, bytes
  double w_min_;    // floor of W, bytes
  double w_;        // W
  double wc_;       // Wc, the reference window
  double u_ = 0.0;  // EWMA of the INT utilization
  int inc_stage_ = 0;
  std::int64_t last_update_seq_ = 0;
  std::int64_t snd_nxt_ = 0;  // bytes sent so far
  bool has_int_ = false;      // an ACK with INT arrived (at last_int_)
  SimTime last_int_;
};

}  // namespace stepsim::cc
