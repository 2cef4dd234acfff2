#pragma once
/// DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
/// SIGCOMM 2015, section 3.1): multiplicative decrease on CNP with alpha, then fast recovery,
/// additive and hyper increase driven by a timer and a byte counter.

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
  [[nodiscard]] double alpha() const { return alpha_; }
  [[nodiscard]] double target_bps() const { return rt_; }
  [[nodiscard]] double current_bps() const { return rc_; }
  [[nodiscard]] int timer_events() const { return t_count_; }
  [[nodiscard]] int byte_events() const { return b_count_; }

 private:
  void increase();

  DcqcnParams p_;
  double line_;
  double rc_;  // current rate, bit/s
  double rt_;  // target rate, bit/s
  double alpha_ = 1.0;
  int t_count_ = 0;
  int b_count_ = 0;
  std::int64_t bytes_ = 0;
  bool active_ = false;  // a CNP has cut the rate: timers and byte counter run
  SimTime alpha_due_ = SimTime::never();
  SimTime alpha_time_ = SimTime::never();  // last alpha decay while idle (decays applied lazily)
  SimTime increase_due_ = SimTime::never();
};

}  // namespace stepsim::cc
