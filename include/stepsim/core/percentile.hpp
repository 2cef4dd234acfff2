#pragma once
/// Nearest-rank percentile of sorted samples (the smallest value with at least q of the samples
/// at or below it), the one definition the reports share.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace stepsim {

template <class T>
[[nodiscard]] T nearest_rank(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return T{};
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(std::max<std::size_t>(rank, 1), sorted.size()) - 1];
}

}  // namespace stepsim
