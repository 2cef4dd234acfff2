// PerftestResult's peak bandwidth, as perftest computes it: the most messages per second over
// any run of consecutive messages, (j - i + 1) / (completed[j] - posted[i]).
#include "stepsim/nic/perftest.hpp"

#include <gtest/gtest.h>

namespace stepsim::nic {
namespace {

TEST(PerftestResult, PeakIsTheBestRunOfConsecutiveMessages) {
  PerftestResult r;
  // Messages posted every 10 us, each done 5 us later; then a burst of three done 1 us apart.
  r.posted_ps = {0, 10'000'000, 20'000'000, 30'000'000, 30'000'000, 30'000'000};
  r.completed_ps = {5'000'000, 15'000'000, 25'000'000, 31'000'000, 32'000'000, 33'000'000};
  // Best: the burst, 3 messages from 30 us to 33 us = 1e6 per second.
  EXPECT_NEAR(r.peak_messages_per_s(), 3.0 / 3e-6, 1e-3);
}

TEST(PerftestResult, SteadyStreamPeakIsItsRate) {
  PerftestResult r;
  for (int i = 0; i < 100; ++i) {
    r.posted_ps.push_back(i * 1'000'000LL);
    r.completed_ps.push_back(i * 1'000'000LL + 500'000);
  }
  // The single-message runs take 0.5 us each: the best run is one message, 2e6 per second.
  EXPECT_NEAR(r.peak_messages_per_s(), 2e6, 1);
}

TEST(PerftestResult, NoMessagesNoPeak) {
  PerftestResult r;
  EXPECT_EQ(r.peak_messages_per_s(), 0);
}

}  // namespace
}  // namespace stepsim::nic
