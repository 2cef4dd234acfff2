#pragma once
/// Small non-cryptographic hashing for digests of simulation state.

#include <cstdint>

namespace stepsim {

/// The SplitMix64 finaliser alone: a bijective 64-bit mixer.
[[nodiscard]] constexpr std::uint64_t finalize64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// SplitMix64's output for state x: the golden-ratio increment, then the finaliser.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  return finalize64(x + 0x9e3779b97f4a7c15ULL);
}

/// Order-dependent combination (h, v) -> h'.
[[nodiscard]] constexpr std::uint64_t hash_combine(std::uint64_t h, std::uint64_t v) {
  return mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

}  // namespace stepsim
