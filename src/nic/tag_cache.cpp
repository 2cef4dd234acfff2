#include "src/nic/tag_cache.hpp"

#include <algorithm>

#include "stepsim/core/hash.hpp"

namespace stepsim::nic {

TagCache::TagCache(std::int64_t entries, int ways) {
  ways_ =
      static_cast<std::uint32_t>(std::max<std::int64_t>(1, std::min<std::int64_t>(ways, entries)));
  sets_ = static_cast<std::uint32_t>(std::max<std::int64_t>(1, entries / ways_));
}

bool TagCache::lookup(std::uint64_t key) {
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
