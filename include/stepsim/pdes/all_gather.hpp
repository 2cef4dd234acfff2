#pragma once
/// Gathering records from every rank onto every rank, over Sync's collectives: the records each
/// rank owns (a trace's rows, found on its servers only), concatenated in rank order, so the
/// result does not depend on how LPs were spread over the ranks once the caller sorts it. Called
/// at the end of a run, not per event.

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "stepsim/pdes/sync.hpp"

namespace stepsim::pdes {

/// Every rank's `mine` (any count on each rank), concatenated in rank order, on every rank:
/// each rank's words at their place and zeros elsewhere, summed over the ranks.
inline std::vector<std::uint64_t> all_gather_words(Sync& sync,
                                                   const std::vector<std::uint64_t>& mine) {
  const auto ranks = static_cast<std::size_t>(sync.size());
  const auto me = static_cast<std::size_t>(sync.rank());
  if (ranks == 1) return mine;
  std::vector<std::uint64_t> counts(ranks, 0);
  counts[me] = mine.size();
  sync.allreduce_sum(counts);
  std::size_t before = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r < me) before += counts[r];
    total += counts[r];
  }
  std::vector<std::uint64_t> all(total, 0);
  for (std::size_t i = 0; i < mine.size(); ++i) all[before + i] = mine[i];
  sync.allreduce_sum(all);
  return all;
}

/// Every rank's records `mine` (trivially copyable; any count on each rank), concatenated in
/// rank order, on every rank.
template <class T>
std::vector<T> all_gather(Sync& sync, const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  constexpr std::size_t kWords = (sizeof(T) + 7) / 8;
  std::vector<std::uint64_t> words(mine.size() * kWords, 0);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(&words[i * kWords], static_cast<const void*>(&mine[i]), sizeof(T));
  }
  const std::vector<std::uint64_t> all = all_gather_words(sync, words);
  std::vector<T> out(all.size() / kWords);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::memcpy(static_cast<void*>(&out[i]), &all[i * kWords], sizeof(T));
  }
  return out;
}

}  // namespace stepsim::pdes
