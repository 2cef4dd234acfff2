#pragma once
// A set-associative cache of 64-bit keys with LRU replacement: the NIC's QP-context SRAM and its
// memory-translation (MTT) cache. It models hits and misses only (no data). Its arrays are
// allocated on first use: a NIC that never sends or receives holds none (a 16k-GPU fabric has
// 16,384 NICs, most of them idle in any one collective).

#include <cstdint>
#include <vector>

#include "stepsim/core/hash.hpp"

namespace stepsim::nic {

class TagCache {
 public:
  TagCache() = default;
  /// `entries` keys in sets of `ways` (clamped to 1..entries); at least one set.
  TagCache(std::int64_t entries, int ways);

  /// True on a hit; a miss installs the key over its set's least recently used entry.
  bool access(std::uint64_t key) {
    if (key == last_) return true;  // the entry just used (the common case) is the newest
    last_ = key;
    return lookup(key);
  }
  [[nodiscard]] std::uint32_t sets() const { return sets_; }
  [[nodiscard]] std::uint32_t ways() const { return ways_; }

 private:
  static constexpr std::uint64_t kEmpty = ~0ULL;
  bool lookup(std::uint64_t key);

  std::uint32_t sets_ = 1;
  std::uint32_t ways_ = 1;
  std::uint64_t clock_ = 0;
  std::uint64_t last_ = kEmpty;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint64_t> stamp_;
};

// Inline: every packet looks up its QP's context and its page's translation.
inline bool TagCache::lookup(std::uint64_t key) {
  if (tags_.empty()) [[unlikely]] {
    tags_.assign(static_cast<std::size_t>(sets_) * ways_, kEmpty);
    stamp_.assign(tags_.size(), 0);
  }
  const std::size_t base = static_cast<std::size_t>(mix64(key) % sets_) * ways_;
  std::size_t victim = base;
  ++clock_;
  for (std::size_t i = base; i < base + ways_; ++i) {
    if (tags_[i] == key) {
      stamp_[i] = clock_;
      return true;
    }
    if (stamp_[i] < stamp_[victim]) victim = i;
  }
  tags_[victim] = key;
  stamp_[victim] = clock_;
  return false;
}

}  // namespace stepsim::nic
