#include "stepsim/pdes/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace stepsim::pdes {
namespace {

TEST(Rng, SameKeySameStream) {
  Rng a(1, 42, 3);
  Rng b(1, 42, 3);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u32(), b.next_u32());
  EXPECT_EQ(a.draws(), 1000u);
}

TEST(Rng, StreamIsRandomAccessByCounter) {
  // Word k is a pure function of (seed, entity, stream, k): no hidden state.
  Rng a(9, 1234567890123ULL, 5);
  std::vector<std::uint32_t> words;
  for (int i = 0; i < 40; ++i) words.push_back(a.next_u32());
  for (std::uint64_t k = 0; k < 40; ++k) {
    EXPECT_EQ(Rng::block(9, 1234567890123ULL, 5, k / 4).v[k % 4], words[k]);
  }
}

TEST(Rng, EntitiesStreamsAndSeedsAreIndependent) {
  auto first = [](Rng r) {
    std::vector<std::uint32_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(r.next_u32());
    return v;
  };
  const auto base = first(Rng(1, 10, 0));
  EXPECT_NE(base, first(Rng(1, 11, 0)));                    // other entity
  EXPECT_NE(base, first(Rng(1, 10, 1)));                    // other stream
  EXPECT_NE(base, first(Rng(2, 10, 0)));                    // other seed
  EXPECT_NE(base, first(Rng(1, 10ULL | (1ULL << 40), 0)));  // high bits of the entity count
}

TEST(Rng, UniformPassesChiSquare) {
  // 100 bins, 200,000 draws: chi-square with 99 dof has mean 99, sd 14; 99.9% quantile ~148.
  Rng r(1, 77, 0);
  constexpr int kBins = 100;
  constexpr int kN = 200'000;
  std::vector<int> bins(kBins, 0);
  for (int i = 0; i < kN; ++i) ++bins[static_cast<int>(r.uniform() * kBins)];
  double chi2 = 0;
  for (int c : bins) chi2 += (c - kN / kBins) * (c - kN / kBins) / static_cast<double>(kN / kBins);
  EXPECT_LT(chi2, 148.0);
  EXPECT_GT(chi2, 60.0);  // too uniform is suspicious too (0.1% quantile ~ 63)
}

TEST(Rng, ExponentialHasItsMeanAndVariance) {
  Rng r(1, 5, 0);
  constexpr int kN = 400'000;
  double sum = 0;
  double sum2 = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = r.exponential(2.0);
    ASSERT_GE(x, 0.0);
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / kN;
  const double var = sum2 / kN - mean * mean;
  EXPECT_NEAR(mean, 2.0, 5 * 2.0 / std::sqrt(kN));  // 5 standard errors
  EXPECT_NEAR(var, 4.0, 0.1);
}

TEST(Rng, BelowIsInRangeAndUnbiased) {
  Rng r(3, 3, 3);
  constexpr std::uint32_t kN = 7;
  std::vector<int> hits(kN, 0);
  for (int i = 0; i < 70'000; ++i) {
    const std::uint32_t x = r.below(kN);
    ASSERT_LT(x, kN);
    ++hits[x];
  }
  for (int h : hits) EXPECT_NEAR(h, 10'000, 500);  // sd ~ 93
  EXPECT_EQ(r.below(1), 0u);
}

TEST(Rng, BernoulliMatchesProbability) {
  Rng r(4, 4, 4);
  int yes = 0;
  for (int i = 0; i < 100'000; ++i) yes += r.bernoulli(0.1) ? 1 : 0;
  EXPECT_NEAR(yes, 10'000, 500);  // sd ~ 95
}

}  // namespace
}  // namespace stepsim::pdes

namespace stepsim::pdes {
namespace {

TEST(RngZiggurat, TablesCloseAtTheTop) {
  // Equal-area layers must end exactly at the mode: f(x[255]) + area / x[255] = f(0) = 1.
  const auto& z = detail::kExpZiggurat;
  EXPECT_NEAR(z.f[255] + detail::ExpZiggurat::kArea / z.x[255], 1.0, 1e-9);
  for (int i = 1; i < 256; ++i) ASSERT_GT(z.x[i], z.x[i + 1]);
}

TEST(RngZiggurat, ExponentialMatchesItsCdfIncludingTheTail) {
  // P(X > q) = exp(-q) at quantiles through the wedges and into the tail (> 7.697).
  Rng r(11, 12, 13);
  constexpr int kN = 2'000'000;
  const double qs[] = {0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 7.0, 8.0, 10.0};
  int above[std::size(qs)] = {};
  for (int i = 0; i < kN; ++i) {
    const double x = r.unit_exponential();
    for (std::size_t k = 0; k < std::size(qs); ++k) above[k] += x > qs[k] ? 1 : 0;
  }
  for (std::size_t k = 0; k < std::size(qs); ++k) {
    const double p = std::exp(-qs[k]);
    const double sd = std::sqrt(kN * p * (1 - p));
    EXPECT_NEAR(above[k], kN * p, 5 * sd + 1) << "P(X > " << qs[k] << ")";
  }
}

}  // namespace
}  // namespace stepsim::pdes
