#pragma once
/// Counter-based random numbers (Random123 Philox4x32-10) keyed by a simulated entity and a stream,
/// never by rank or thread: the same entity draws the same numbers on any partition.

#include <cmath>
#include <cstdint>

#include <Random123/philox.h>

namespace stepsim::pdes {

namespace detail {
/// Ziggurat tables for the unit exponential (Marsaglia & Tsang, J. Stat. Softw. 5(8), 2000):
/// 256 layers of equal area; x[0] is the virtual width of the base layer, x[256] = 0.
struct ExpZiggurat {
  static constexpr int kLayers = 256;
  static constexpr double kR = 7.69711747013104972;      // right edge of the base rectangle
  static constexpr double kArea = 3.949659822581572e-3;  // area of every layer
  double x[kLayers + 1];
  double f[kLayers + 1];  // exp(-x)
  ExpZiggurat();
};
extern const ExpZiggurat kExpZiggurat;
}  // namespace detail

/// A random stream of one entity. Plain data: lives inside LP state and can be copied.
/// Word k of stream (seed, entity, stream) is
/// Philox4x32-10(key = entity, counter = {k/4 (64 bit), stream, seed})[k % 4].
class Rng {
 public:
  Rng() = default;
  Rng(std::uint32_t seed, std::uint64_t entity, std::uint32_t stream)
      : entity_(entity), stream_(stream), seed_(seed) {}

  [[nodiscard]] std::uint64_t entity() const { return entity_; }
  [[nodiscard]] std::uint32_t stream() const { return stream_; }
  /// Number of 32-bit words drawn so far.
  [[nodiscard]] std::uint64_t draws() const { return counter_; }

  /// The next uniformly distributed 32-bit word.
  std::uint32_t next_u32() {
    const unsigned lane = static_cast<unsigned>(counter_ & 3u);
    if (lane == 0) refill(counter_ >> 2);
    ++counter_;
    return block_[lane];
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const std::uint64_t hi = next_u32();
    const std::uint64_t lo = next_u32();
    return static_cast<double>(((hi << 32) | lo) >> 11) * 0x1.0p-53;
  }
  /// Uniform in (0, 1]: safe for log().
  double uniform_pos() { return 1.0 - uniform(); }
  /// Exponential with the given mean (same unit as the result). Ziggurat method: one 64-bit
  /// draw and no logarithm in ~99% of cases; exact distribution (53-bit resolution).
  double exponential(double mean) { return mean * unit_exponential(); }
  /// Exponential with mean 1.
  double unit_exponential() {
    const detail::ExpZiggurat& z = detail::kExpZiggurat;
    for (;;) {
      const std::uint64_t hi = next_u32();
      const std::uint64_t bits = (hi << 32) | next_u32();
      const unsigned layer = static_cast<unsigned>(bits & 0xffu);
      const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
      const double xv = u * z.x[layer];
      if (xv < z.x[layer + 1]) [[likely]]
        return xv;  // inside the next layer's width
      if (layer == 0) return detail::ExpZiggurat::kR - std::log(uniform_pos());  // the tail
      // The wedge between the rectangle and the curve.
      if (z.f[layer] + uniform() * (z.f[layer + 1] - z.f[layer]) < std::exp(-xv)) return xv;
    }
  }
  /// Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject), n >= 1.
  std::uint32_t below(std::uint32_t n) {
    std::uint64_t m = static_cast<std::uint64_t>(next_u32()) * n;
    auto low = static_cast<std::uint32_t>(m);
    if (low < n) {
      const std::uint32_t threshold = (0u - n) % n;
      while (low < threshold) {
        m = static_cast<std::uint64_t>(next_u32()) * n;
        low = static_cast<std::uint32_t>(m);
      }
    }
    return static_cast<std::uint32_t>(m >> 32);
  }
  /// True with probability p (32-bit resolution).
  bool bernoulli(double p) {
    if (p >= 1.0) {
      next_u32();
      return true;
    }
    const auto threshold = static_cast<std::uint64_t>(p * 4294967296.0);
    return next_u32() < threshold;
  }

  /// Block `index` of a stream, for random access without state.
  static r123::Philox4x32::ctr_type block(std::uint32_t seed, std::uint64_t entity,
                                          std::uint32_t stream, std::uint64_t index) {
    const r123::Philox4x32::key_type key = {
        {static_cast<std::uint32_t>(entity), static_cast<std::uint32_t>(entity >> 32)}};
    const r123::Philox4x32::ctr_type ctr = {
        {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), stream, seed}};
    return r123::Philox4x32()(ctr, key);
  }

 private:
  void refill(std::uint64_t index) {
    const auto out = block(seed_, entity_, stream_, index);
    for (unsigned i = 0; i < 4; ++i) block_[i] = out.v[i];
  }

  std::uint64_t entity_ = 0;
  std::uint64_t counter_ = 0;
  std::uint32_t stream_ = 0;
  std::uint32_t seed_ = 0;
  std::uint32_t block_[4] = {};
};

}  // namespace stepsim::pdes
