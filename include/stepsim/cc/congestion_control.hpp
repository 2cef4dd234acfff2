#pragma once
/// Congestion control of one sender (queue pair): an interface, parameters and a registry.
/// One file per algorithm in src/cc/ ("none", "dcqcn"; HPCC comes with the RDMA issue). The NIC
/// calls the hooks and paces the QP at rate(); it schedules an event at next_timer().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::cc {

/// DCQCN parameters (Zhu et al., SIGCOMM 2015; validation/fabric.md C3), the paper's defaults.
struct DcqcnParams {
  double g = 1.0 / 256;                          ///< alpha gain
  SimTime alpha_timer = SimTime::us(55);         ///< K: alpha decays by (1 - g) each K without CNP
  SimTime increase_timer = SimTime::us(55);      ///< T: rate-increase timer period
  std::int64_t byte_counter = 10'000'000;        ///< B: bytes per byte-counter increase event
  int fast_recovery_rounds = 5;                  ///< F
  DataRate rate_ai = DataRate::bps(40'000'000);  ///< R_AI: additive increase step
  DataRate rate_hai = DataRate::bps(100'000'000);  ///< R_HAI: hyper increase step
  DataRate min_rate = DataRate::bps(100'000'000);  ///< floor of the current rate
  SimTime cnp_interval = SimTime::us(50);          ///< N: at most one CNP per QP per interval
};

struct CcParams {
  std::string algorithm = "dcqcn";
  DcqcnParams dcqcn;
};

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  /// The rate the QP may send at now.
  [[nodiscard]] virtual DataRate rate() const = 0;
  /// The QP put `bytes` on the wire at `now`.
  virtual void on_sent(SimTime now, std::int64_t bytes) = 0;
  /// A congestion notification (CNP) for this QP arrived at `now`.
  virtual void on_cnp(SimTime now) = 0;
  /// When on_timer() wants to run next; never() if no timer is armed.
  [[nodiscard]] virtual SimTime next_timer() const = 0;
  /// Runs the timers due at `now` (the NIC calls it at next_timer()).
  virtual void on_timer(SimTime now) = 0;
};

/// Creates `p.algorithm` for a QP on a port of `line_rate`; the error lists the algorithms.
Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   DataRate line_rate);
std::vector<std::string> congestion_control_names();

/// The notification point (receiver) of DCQCN: at most one CNP per QP per interval, sent when an
/// ECN-marked packet arrives.
class CnpGenerator {
 public:
  explicit CnpGenerator(SimTime interval) : interval_(interval) {}
  /// A packet arrived at `now`; true if a CNP must be sent for it.
  bool on_packet(SimTime now, bool ecn_marked) {
    if (!ecn_marked) return false;
    if (sent_any_ && now - last_ < interval_) return false;
    sent_any_ = true;
    last_ = now;
    return true;
  }

 private:
  SimTime interval_;
  SimTime last_;
  bool sent_any_ = false;
};

}  // namespace stepsim::cc
