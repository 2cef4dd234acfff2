#pragma once
// The ETA of a long run from its simulated progress: how far simulated time has come against an
// expected end (for `stepsim run`, the step time at ideal fidelity), and how fast it came over
// recent windows of wall time. Pure arithmetic on the times it is given (no clock), so tests drive
// it with a fake one.

#include <deque>
#include <string>

namespace stepsim::cli {

class EtaEstimator {
 public:
  /// What eta() says.
  enum class State {
    kCounting,      ///< simulated time is below the estimate: eta_s > 0 seconds left
    kNoProgress,    ///< no simulated time yet (or no estimate): nothing to extrapolate
    kStalled,       ///< no new simulated time for stall_s (or more): ETA unknown
    kPastEstimate,  ///< simulated time passed the estimate: the run is slower than it; ETA unknown
  };
  struct Eta {
    State state = State::kNoProgress;
    double fraction = 0;  ///< simulated time / estimate (above 1 once past it)
    double eta_s = -1;    ///< wall seconds left (kCounting only), always > 0
    double rate = 0;      ///< simulated seconds per wall second (the lower of the two windows')
    double stall_s = 0;   ///< wall seconds since simulated time last moved
  };

  /// `expected_s`: the simulated time at which the run is expected to end (> 0 to count down);
  /// `window_s`: the long window (wall seconds) of the rate; the short one is a twelfth of it, at
  /// least 5 s (and no longer than it), and a stall is no progress for a short window.
  EtaEstimator(double expected_s, double window_s);

  /// Simulated time `sim_s` reached at wall time `wall_s` (seconds since the start; never less
  /// than an earlier call's). Simulated time that goes back (reports of different stages) is
  /// ignored: progress is the furthest time reported.
  void observe(double wall_s, double sim_s);

  /// The ETA at wall time `wall_s` (>= the last observe()'s): (estimate - simulated) / rate. A
  /// window's rate is the simulated time gained within it over its length (over the time since
  /// the start while that is shorter, so early on ETA = elapsed x (1 - f) / f); the rate used is
  /// the lower of the long and the short window's, so a slowdown shows within seconds and a
  /// burst does not promise an early end. The ETA is never 0 before the estimate is reached;
  /// after a stall or past the estimate it is unknown, not a guess.
  [[nodiscard]] Eta eta(double wall_s) const;

  [[nodiscard]] double sim_s() const { return sim_; }
  [[nodiscard]] double expected_s() const { return expected_; }
  [[nodiscard]] double short_window_s() const { return short_; }

 private:
  [[nodiscard]] double rate_over(double wall_s, double window_s) const;

  struct Sample {
    double wall;
    double sim;
  };
  double expected_;
  double window_;
  double short_;
  double sim_ = 0;              // the furthest simulated time observed
  double moved_ = 0;            // the wall time it was reached at
  std::deque<Sample> samples_;  // increasing wall and sim; starts with (0, 0)
};

/// A wall-time span for a progress line: "<1 s", "42 s", "3 min 05 s", "2 h 07 min". Never "0 s".
std::string duration_text(double s);

}  // namespace stepsim::cli
