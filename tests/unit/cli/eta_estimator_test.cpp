#include "src/cli/eta_estimator.hpp"

#include <gtest/gtest.h>

#include <string>

namespace stepsim::cli {
namespace {

using State = EtaEstimator::State;

// Steady progress: the ETA is what is left over the rate (elapsed x (1 - f) / f), falls as time
// passes, and is never 0 before the estimate is reached.
TEST(EtaEstimator, SteadyRateCountsDownAndNeverReachesZeroEarly) {
  EtaEstimator e(/*expected_s=*/10, /*window_s=*/60);
  double previous = 1e300;
  for (int wall = 1; wall < 1000; ++wall) {  // 0.01 simulated s per wall s: 1000 s in all
    e.observe(wall, 0.01 * wall);
    const EtaEstimator::Eta x = e.eta(wall);
    ASSERT_EQ(x.state, State::kCounting) << wall;
    EXPECT_NEAR(x.eta_s, 1000.0 - wall, 1e-6 * 1000) << wall;
    EXPECT_GT(x.eta_s, 0) << wall;
    EXPECT_LT(x.eta_s, previous) << wall;
    EXPECT_NEAR(x.fraction, 0.001 * wall, 1e-12);
    previous = x.eta_s;
  }
}

// The rate is a recent one: after a slow start, the ETA follows the fast rate of the last window,
// not elapsed * (1 - f) / f over the whole run.
TEST(EtaEstimator, RateIsTakenOverTheRecentWindow) {
  EtaEstimator e(100, 60);
  for (int wall = 1; wall <= 600; ++wall) e.observe(wall, 0.01 * wall);  // 6 s in 600 s
  for (int wall = 601; wall <= 800; ++wall) e.observe(wall, 6 + 0.1 * (wall - 600));  // 26 s
  const EtaEstimator::Eta x = e.eta(800);
  ASSERT_EQ(x.state, State::kCounting);
  EXPECT_NEAR(x.rate, 0.1, 1e-9);
  EXPECT_NEAR(x.eta_s, (100 - 26) / 0.1, 1e-6);
  const double since_start = 800 * (1 - 0.26) / 0.26;  // ~2277 s: what a start-based ETA says
  EXPECT_LT(x.eta_s, since_start / 2);
}

// A slowdown shows within seconds (the short window), not after a whole window of fast history:
// the last pipeline passes of a memoized step, or a congested phase, do not get "ETA 1 s".
TEST(EtaEstimator, SlowdownShowsWithinSeconds) {
  EtaEstimator e(100, 60);
  for (int wall = 1; wall <= 300; ++wall) e.observe(wall, 0.1 * wall);  // 30 s at 300 s
  for (int wall = 301; wall <= 320; ++wall) e.observe(wall, 30 + 0.001 * (wall - 300));
  const EtaEstimator::Eta x = e.eta(320);
  ASSERT_EQ(x.state, State::kCounting);
  EXPECT_NEAR(x.rate, 0.001, 1e-9);
  const double long_window_eta = (100 - 30.02) / ((30.02 - 26) / 60.0);  // ~1045 s
  EXPECT_GT(x.eta_s, 10 * long_window_eta);
}

// A stall (a long collective, a slow phase) raises the ETA at once (the short window), and once
// it lasts a short window the ETA is unknown rather than a guess; progress resuming brings a
// countdown back.
TEST(EtaEstimator, StallRaisesTheEtaThenMakesItUnknown) {
  EtaEstimator e(10, 60);
  for (int wall = 1; wall <= 100; ++wall) e.observe(wall, 0.05 * wall);  // 5 s at 100 s
  EXPECT_NEAR(e.eta(100).eta_s, 100, 1e-6);
  const EtaEstimator::Eta three = e.eta(103);  // 3 s without progress
  ASSERT_EQ(three.state, State::kCounting);
  EXPECT_NEAR(three.eta_s, 5 / (0.1 / 5), 1e-6);  // 0.1 s gained in the last 5 s
  for (int wall = 106; wall <= 2000; wall += 10) {
    e.observe(wall, 5);  // no new simulated time
    const EtaEstimator::Eta x = e.eta(wall);
    ASSERT_EQ(x.state, State::kStalled) << wall;
    EXPECT_LT(x.eta_s, 0);
    EXPECT_NEAR(x.stall_s, wall - 100, 1e-9);
  }
  for (int wall = 2001; wall <= 2100; ++wall) e.observe(wall, 5 + 0.02 * (wall - 2000));
  const EtaEstimator::Eta back = e.eta(2100);
  ASSERT_EQ(back.state, State::kCounting);
  EXPECT_NEAR(back.eta_s, (10 - 7) / 0.02, 1e-6);
}

// Reports that go back in simulated time (stages report their own clocks) do not move the
// progress back: the fraction never falls.
TEST(EtaEstimator, FractionIsMonotone) {
  EtaEstimator e(1, 60);
  const double sims[] = {0.1, 0.3, 0.2, 0.25, 0.4, 0.1, 0.5};
  double wall = 0;
  double previous = 0;
  for (double s : sims) {
    wall += 1;
    e.observe(wall, s);
    const double f = e.eta(wall).fraction;
    EXPECT_GE(f, previous);
    previous = f;
  }
  EXPECT_DOUBLE_EQ(e.sim_s(), 0.5);
}

// Past the estimate the run is slower than it: the ETA is unknown (no countdown to 0), while the
// fraction and the rate still say how far and how fast.
TEST(EtaEstimator, PastTheEstimateIsUnknownNotZero) {
  EtaEstimator e(2, 60);
  for (int wall = 1; wall <= 300; ++wall) e.observe(wall, 0.01 * wall);  // 3 s > 2 s
  const EtaEstimator::Eta x = e.eta(300);
  EXPECT_EQ(x.state, State::kPastEstimate);
  EXPECT_LT(x.eta_s, 0);
  EXPECT_NEAR(x.fraction, 1.5, 1e-12);
  EXPECT_NEAR(x.rate, 0.01, 1e-9);
}

// Nothing to say before any simulated time, or without an estimate.
TEST(EtaEstimator, NoProgressNoEta) {
  EtaEstimator e(10, 60);
  EXPECT_EQ(e.eta(5).state, State::kNoProgress);
  e.observe(6, 0);
  EXPECT_EQ(e.eta(7).state, State::kNoProgress);
  EtaEstimator none(0, 60);
  none.observe(1, 1);
  EXPECT_EQ(none.eta(2).state, State::kNoProgress);
}

// However often it is fed, it keeps a bounded number of samples and the same answer.
TEST(EtaEstimator, DenseReportsGiveTheSameRate) {
  EtaEstimator sparse(100, 60);
  EtaEstimator dense(100, 60);
  for (int wall = 1; wall <= 300; ++wall) sparse.observe(wall, 0.1 * wall);
  for (int ms = 1; ms <= 300000; ++ms) dense.observe(ms * 1e-3, 1e-4 * ms);
  EXPECT_NEAR(dense.eta(300).eta_s, sparse.eta(300).eta_s, 0.02 * sparse.eta(300).eta_s);
}

TEST(DurationText, NeverZero) {
  EXPECT_EQ(duration_text(0), "<1 s");
  EXPECT_EQ(duration_text(0.3), "<1 s");
  EXPECT_EQ(duration_text(42.4), "42 s");
  EXPECT_EQ(duration_text(185), "3 min 05 s");
  EXPECT_EQ(duration_text(7620), "2 h 07 min");
}

}  // namespace
}  // namespace stepsim::cli
