#include "stepsim/fabric/ecn_marker.hpp"

#include <gtest/gtest.h>

namespace stepsim::fabric {
namespace {

EcnParams red(std::int64_t kmin, std::int64_t kmax, double pmax) {
  EcnParams p;
  p.kmin = Bytes(kmin);
  p.kmax = Bytes(kmax);
  p.pmax = pmax;
  return p;
}

constexpr std::int64_t kFrame = 4096 + kRoceHeaderBytes;

TEST(EcnMarker, ProbabilityIsZeroThenLinearToPmaxThenOne) {
  const EcnMarker m(red(20'000, 60'000, 0.2), Bytes(4096));
  EXPECT_EQ(m.probability(0, kFrame), 0.0);
  EXPECT_EQ(m.probability(20'000, kFrame), 0.0);
  EXPECT_DOUBLE_EQ(m.probability(40'000, kFrame), 0.1);
  EXPECT_DOUBLE_EQ(m.probability(59'999, kFrame), 0.2 * 39'999 / 40'000);
  EXPECT_EQ(m.probability(60'000, kFrame), 1.0);
  EXPECT_EQ(m.probability(1'000'000, kFrame), 1.0);
}

TEST(EcnMarker, ACellIsMarkedWhenAnyOfItsPacketsWouldBe) {
  const EcnMarker m(red(20'000, 60'000, 0.2), Bytes(4096));
  const std::int64_t cell = 4 * 4096 + kRoceHeaderBytes;  // four MTU packets
  EXPECT_DOUBLE_EQ(m.probability(40'000, cell), 1.0 - 0.9 * 0.9 * 0.9 * 0.9);
}

TEST(EcnMarker, DisabledOrBelowKminNeverMarksNorDraws) {
  EcnParams off = red(20'000, 60'000, 0.2);
  off.enabled = false;
  pdes::Rng rng(1, 2, 3);
  EXPECT_FALSE(EcnMarker(off, Bytes(4096)).mark(1'000'000, kFrame, rng));
  EXPECT_FALSE(EcnMarker(red(20'000, 60'000, 0.2), Bytes(4096)).mark(10'000, kFrame, rng));
  EXPECT_EQ(rng.draws(), 0u);
}

TEST(EcnMarker, MarksTheExpectedShareBetweenKminAndKmax) {
  const EcnMarker m(red(20'000, 60'000, 0.2), Bytes(4096));
  pdes::Rng rng(7, 1, 1);
  int marked = 0;
  const int n = 100'000;
  for (int i = 0; i < n; ++i) marked += m.mark(40'000, kFrame, rng) ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(marked) / n, 0.1, 0.005);
}

}  // namespace
}  // namespace stepsim::fabric
