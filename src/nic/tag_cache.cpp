#include "src/nic/tag_cache.hpp"

#include <algorithm>

namespace stepsim::nic {

TagCache::TagCache(std::int64_t entries, int ways) {
  ways_ =
      static_cast<std::uint32_t>(std::max<std::int64_t>(1, std::min<std::int64_t>(ways, entries)));
  sets_ = static_cast<std::uint32_t>(std::max<std::int64_t>(1, entries / ways_));
}

}  // namespace stepsim::nic
