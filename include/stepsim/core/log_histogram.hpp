#pragma once
/// A histogram of positive durations on a logarithmic scale (8 bins per octave, so a bin is
/// 9% wide), for percentiles of values too many to keep: message completion times summed over
/// servers, ranks and repetitions. Counts add up exactly, so merged histograms are the same for
/// any number of ranks.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace stepsim {

class LogHistogram {
 public:
  static constexpr int kSubBins = 8;
  static constexpr int kOctaves = 48;  ///< 1 ps to 2^48 ps (281 s)
  static constexpr int kBins = kSubBins * kOctaves;

  void add(std::int64_t value, std::uint64_t count = 1) { bins_[bin_of(value)] += count; }
  void merge(const LogHistogram& other, std::uint64_t weight = 1) {
    for (int i = 0; i < kBins; ++i) bins_[i] += other.bins_[i] * weight;
  }
  [[nodiscard]] std::uint64_t count() const {
    std::uint64_t n = 0;
    for (std::uint64_t b : bins_) n += b;
    return n;
  }
  /// The upper edge of the bin holding the nearest-rank q-quantile (0 if empty).
  [[nodiscard]] double quantile(double q) const {
    const std::uint64_t n = count();
    if (n == 0) return 0;
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n))));
    std::uint64_t seen = 0;
    for (int i = 0; i < kBins; ++i) {
      seen += bins_[i];
      if (seen >= rank) return upper_edge(i);
    }
    return upper_edge(kBins - 1);
  }
  [[nodiscard]] std::array<std::uint64_t, kBins>& bins() { return bins_; }
  [[nodiscard]] const std::array<std::uint64_t, kBins>& bins() const { return bins_; }

  /// Bin i holds [lower_edge(i), upper_edge(i)).
  static double upper_edge(int i) { return std::exp2(static_cast<double>(i + 1) / kSubBins); }
  static int bin_of(std::int64_t value) {
    if (value <= 1) return 0;
    const double b = std::floor(std::log2(static_cast<double>(value)) * kSubBins);
    return std::clamp(static_cast<int>(b), 0, kBins - 1);
  }

 private:
  std::array<std::uint64_t, kBins> bins_{};
};

}  // namespace stepsim
