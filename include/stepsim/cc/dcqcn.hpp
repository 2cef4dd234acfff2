#pragma once
/// DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
/// SIGCOMM 2015, section 3.1): multiplicative decrease on CNP with alpha, then fast recovery,
/// additive and hyper increase driven by a timer and a byte counter; with the NIC firmware's
/// refinements (at most one cut per rate-reduce period, the target clamped only after a timer
/// increase) as DcqcnParams switches them on.

#include "stepsim/cc/congestion_control.hpp"

namespace stepsim::cc {

class Dcqcn final : public CongestionControl {
 public:
  Dcqcn(const DcqcnParams& p, DataRate line_rate);

  [[nodiscard]] DataRate rate() const override {
    return DataRate::bps(static_cast<std::int64_t>(rc_));
  }
  void on_sent(SimTime now, std::int64_t bytes) override;
  void on_cnp(SimTime now) override;
  [[nodiscard]] SimTime next_timer() const override;
  void on_timer(SimTime now) override;

  /// Observable state, for tests and traces.
  /// Alpha as of the last CNP; alpha_at(now) applies the decays due since then.
  [[nodiscard]] double alpha() const { return alpha_; }
  [[nodiscard]] double alpha_at(SimTime now) const;
  [[nodiscard]] double target_bps() const { return rt_; }
  [[nodiscard]] double current_bps() const { return rc_; }
  [[nodiscard]] int timer_events() const { return t_count_; }
  [[nodiscard]] int byte_events() const { return b_count_; }

 private:
  void increase();
  void cut(SimTime now);
  void decay_alpha(SimTime now);

  DcqcnParams p_;
  double line_;
  double rc_;  // current rate, bit/s
  double rt_;  // target rate, bit/s
  double alpha_;
  int t_count_ = 0;
  int b_count_ = 0;
  std::int64_t bytes_ = 0;
  bool active_ = false;                  // a CNP has cut the rate: timers and byte counter run
  bool timer_raised_ = false;            // the timer raised the rate since the last cut
  bool cut_pending_ = false;             // a CNP came within the rate-reduce period of the last cut
  SimTime alpha_at_ = SimTime::never();  // alpha's last update (its decays are applied lazily)
  SimTime last_cut_ = SimTime::never();
  SimTime increase_due_ = SimTime::never();
};

}  // namespace stepsim::cc
