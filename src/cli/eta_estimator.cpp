#include "src/cli/eta_estimator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stepsim::cli {
namespace {

// The short window's least length (wall seconds).
constexpr double kShortWindowMin = 5;
// Samples kept per short window: a rate within a few per cent, however often observe() is
// called (the long window holds twelve times as many).
constexpr double kSamplesPerShortWindow = 32;

}  // namespace

EtaEstimator::EtaEstimator(double expected_s, double window_s)
    : expected_(expected_s),
      window_(std::max(window_s, 1e-9)),
      short_(std::min(window_, std::max(kShortWindowMin, window_ / 12))) {
  samples_.push_back({0, 0});
}

void EtaEstimator::observe(double wall_s, double sim_s) {
  if (!(sim_s > sim_)) return;  // no new simulated time (or NaN)
  sim_ = sim_s;
  moved_ = wall_s;
  if (wall_s - samples_.back().wall >= short_ / kSamplesPerShortWindow) {
    samples_.push_back({wall_s, sim_s});
  } else {
    // Too close to the last sample: it takes the new time, a little early (which makes a rate
    // over a window that starts between the two a little low, never high).
    samples_.back().sim = sim_s;
  }
  // The front is never needed once the next sample is a window old: a window's start finds that
  // one (or a newer one).
  const double cutoff = wall_s - window_;
  while (samples_.size() > 1 && samples_[1].wall <= cutoff) samples_.pop_front();
}

double EtaEstimator::rate_over(double wall_s, double window_s) const {
  const double from = std::max(0.0, wall_s - window_s);
  if (!(wall_s > from)) return 0;
  // The simulated time reached by `from`: the newest sample at or before it.
  double sim_from = samples_.front().sim;
  for (const Sample& x : samples_) {
    if (x.wall > from) break;
    sim_from = x.sim;
  }
  return (sim_ - sim_from) / (wall_s - from);
}

EtaEstimator::Eta EtaEstimator::eta(double wall_s) const {
  Eta e;
  if (!(expected_ > 0) || !(sim_ > 0)) return e;
  e.fraction = sim_ / expected_;
  e.stall_s = std::max(0.0, wall_s - moved_);
  e.rate = std::min(rate_over(wall_s, window_), rate_over(wall_s, short_));
  if (sim_ >= expected_) {
    e.state = State::kPastEstimate;
  } else if (e.stall_s >= short_ || !(e.rate > 0) || !std::isfinite(e.rate)) {
    e.state = State::kStalled;
  } else {
    e.state = State::kCounting;
    e.eta_s = (expected_ - sim_) / e.rate;
  }
  return e;
}

std::string duration_text(double s) {
  char buf[48];
  if (!(s >= 0.5)) return "<1 s";  // also NaN: never "0 s"
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else if (s < 7200) {
    const auto t = static_cast<long long>(std::llround(s));
    std::snprintf(buf, sizeof buf, "%lld min %02lld s", t / 60, t % 60);
  } else {
    const auto m = static_cast<long long>(std::llround(s / 60));
    std::snprintf(buf, sizeof buf, "%lld h %02lld min", m / 60, m % 60);
  }
  return buf;
}

}  // namespace stepsim::cli
