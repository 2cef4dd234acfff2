#include "stepsim/phy/fec.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "stepsim/pdes/rng.hpp"

namespace stepsim::phy {
namespace {

// Direct binomial sum with products (no logs), in long double: a second implementation.
long double direct_tail(int n, int t, long double p) {
  long double sum = 0;
  for (int j = t + 1; j <= n; ++j) {
    long double c = 1;  // C(n, j) built as a product
    for (int i = 1; i <= j; ++i) c = c * (n - j + i) / i;
    sum += c * std::pow(p, j) * std::pow(1 - p, n - j);
  }
  return sum;
}

TEST(Fec, Kp4HasFifteenCorrectableSymbols) {
  EXPECT_EQ(kKp4.t(), 15);
  EXPECT_EQ(kKp4.data_bits(), 5140);  // 20 x 257-bit blocks
}

// Rounds to two significant figures, the precision of the published table.
double two_significant(double x) {
  const double scale = std::pow(10.0, std::floor(std::log10(x)) - 1);
  return std::round(x / scale) * scale;
}

TEST(Fec, CodewordFailureMatchesThePublishedExactValues) {
  // validation/fabric.md F1: 8.2e-13 at BER 2.4e-4 and 1.4e-18 at 1e-4, given to two significant
  // figures. The exact values (rational arithmetic, Python fractions + math.comb) are
  // 8.151573399e-13 and 1.359811065e-18: within 0.6% and 2.9% of the rounded figures, so the
  // table's 1% tolerance cannot apply to the second; we match the exact values to 1e-9 and the
  // published figures to their two digits.
  const double at_2_4e4 = codeword_failure_probability(kKp4, 2.4e-4);
  const double at_1e4 = codeword_failure_probability(kKp4, 1e-4);
  EXPECT_NEAR(at_2_4e4, 8.151573399e-13, 1e-9 * 8.15e-13);
  EXPECT_NEAR(at_1e4, 1.359811065e-18, 1e-9 * 1.36e-18);
  EXPECT_NEAR(at_2_4e4, 8.2e-13, 0.01 * 8.2e-13);
  EXPECT_DOUBLE_EQ(two_significant(at_2_4e4), 8.2e-13);
  EXPECT_DOUBLE_EQ(two_significant(at_1e4), 1.4e-18);
}

TEST(Fec, LogSpaceSumAgreesWithADirectSum) {
  for (double ber : {1e-5, 1e-4, 2.4e-4, 1e-3, 3e-3}) {
    const long double p = symbol_error_probability(ber, 10);
    const double want = static_cast<double>(direct_tail(544, 15, p));
    EXPECT_NEAR(codeword_failure_probability(kKp4, ber), want, 1e-9 * want) << ber;
  }
}

TEST(Fec, MonteCarloAgreesAtHighBer) {
  // Bit-level simulation of 20,000 codewords at BER 2e-3 (p_cw ~ 0.1, high enough to count).
  constexpr double kBer = 2e-3;
  constexpr int kCodewords = 20'000;
  pdes::Rng rng(1, 0xFEC, 0);
  const auto threshold = static_cast<std::uint32_t>(kBer * 4294967296.0);
  int failed = 0;
  for (int c = 0; c < kCodewords; ++c) {
    int bad_symbols = 0;
    for (int s = 0; s < 544; ++s) {
      bool bad = false;
      for (int b = 0; b < 10; ++b) bad |= rng.next_u32() < threshold;
      bad_symbols += bad ? 1 : 0;
    }
    failed += bad_symbols > 15 ? 1 : 0;
  }
  const double p = codeword_failure_probability(kKp4, kBer);
  const double sd = std::sqrt(kCodewords * p * (1 - p));
  EXPECT_GT(p, 0.01);
  EXPECT_NEAR(failed, kCodewords * p, 5 * sd);
}

TEST(Fec, LanesWithEqualBerMatchTheSingleBerModel) {
  const double lanes[8] = {1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4};
  EXPECT_NEAR(codeword_failure_probability_lanes(kKp4, lanes),
              codeword_failure_probability(kKp4, 1e-4),
              1e-6 * codeword_failure_probability(kKp4, 1e-4));
}

TEST(Fec, OneBadLaneIsABinomialOverItsOwnSymbols) {
  // One lane of eight at BER 1e-3, the rest clean: only that lane's 68 symbols can be hit, so
  // the codeword fails far less often than if every lane had 1e-3.
  double lanes[8] = {1e-3, 0, 0, 0, 0, 0, 0, 0};
  const double one_bad = codeword_failure_probability_lanes(kKp4, lanes);
  EXPECT_GT(one_bad, 0.0);
  EXPECT_LT(one_bad, codeword_failure_probability(kKp4, 1e-3) / 100);
  // The same mean number of symbol errors spread over all 544 symbols (BER 1.25e-4 everywhere)
  // fails more often: Binomial(68, p) has less variance than Binomial(544, p / 8).
  const double even = codeword_failure_probability(kKp4, 1.25e-4);
  EXPECT_LT(one_bad, even);
  // By hand: lane errors ~ Binomial(68, p_s); P(X > 15) as a direct sum.
  const long double ps = symbol_error_probability(1e-3, 10);
  EXPECT_NEAR(one_bad, static_cast<double>(direct_tail(68, 15, ps)), 1e-9 * one_bad);
}

TEST(Fec, ZeroBerLosesNothing) {
  EXPECT_EQ(codeword_failure_probability(kKp4, 0.0), 0.0);
  EXPECT_EQ(codeword_corrected_probability(kKp4, 0.0), 0.0);
  EXPECT_EQ(any_failure_probability(0.0, 1000), 0.0);
  EXPECT_EQ(raw_frame_error_probability(0.0, Bytes(4096)), 0.0);
}

TEST(Fec, PacketsSpanCodewordsAndLoseWithThem) {
  EXPECT_EQ(codewords_spanned(kKp4, Bytes(4096)), 7);  // 32,768 bits / 5,140
  EXPECT_EQ(codewords_spanned(kKp4, Bytes(64)), 1);
  const double pcw = 1e-6;
  EXPECT_NEAR(any_failure_probability(pcw, 7), 1 - std::pow(1 - pcw, 7), 1e-15);
  // Without FEC, raw BER hits whole frames: 1 - (1 - 1e-9)^(4096 * 8).
  EXPECT_NEAR(raw_frame_error_probability(1e-9, Bytes(4096)), 3.2767e-5, 1e-8);
}

TEST(Fec, BurstsMakeItWorseAtTheSameBer) {
  const double independent = codeword_failure_probability_burst(kKp4, 1e-4, 1);
  EXPECT_EQ(independent, codeword_failure_probability(kKp4, 1e-4));
  const double bursty = codeword_failure_probability_burst(kKp4, 1e-4, 4);
  EXPECT_GT(bursty, 1e6 * independent);  // 4 bursts of 4 exceed t = 15
}

TEST(Fec, CorrectedPlusFailedPlusCleanIsOne) {
  for (double ber : {1e-6, 1e-4, 1e-3}) {
    const double p = symbol_error_probability(ber, 10);
    const double clean = std::pow(1 - p, 544);
    EXPECT_NEAR(
        clean + codeword_corrected_probability(kKp4, ber) + codeword_failure_probability(kKp4, ber),
        1.0, 1e-12);
  }
}

}  // namespace
}  // namespace stepsim::phy
