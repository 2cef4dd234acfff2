#include "stepsim/pdes/sync.hpp"

#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {

std::vector<std::uint64_t> Sync::all_gather_words(const std::vector<std::uint64_t>& mine) {
  const auto ranks = static_cast<std::size_t>(size());
  const auto me = static_cast<std::size_t>(rank());
  if (ranks == 1) return mine;
  std::vector<std::uint64_t> counts(ranks, 0);
  counts[me] = mine.size();
  allreduce_sum(counts);
  std::size_t before = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r < me) before += counts[r];
    total += counts[r];
  }
  std::vector<std::uint64_t> all(total, 0);
  for (std::size_t i = 0; i < mine.size(); ++i) all[before + i] = mine[i];
  allreduce_sum(all);
  return all;
}

void SerialSync::set_neighbours(std::span<const int> ranks) {
  STEPSIM_CHECK(ranks.empty(), "a serial run has no neighbour ranks");
}

void SerialSync::exchange(std::span<std::vector<Event>> out, std::vector<Event>&) {
  STEPSIM_CHECK(out.empty(), "a serial run sends no events to other ranks");
}

}  // namespace stepsim::pdes
