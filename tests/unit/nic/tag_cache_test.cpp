// TagCache: the NIC's set-associative LRU cache of QP contexts and translations.
#include "src/nic/tag_cache.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace stepsim::nic {
namespace {

TEST(TagCache, AMissInstallsTheKeyAndTheNextAccessHits) {
  TagCache c(64, 8);
  EXPECT_FALSE(c.access(7));
  EXPECT_TRUE(c.access(7));
  EXPECT_FALSE(c.access(8));
  EXPECT_TRUE(c.access(7));  // not the last key: found in its set
  EXPECT_TRUE(c.access(8));
}

TEST(TagCache, ShapeIsEntriesOverWaysWithWaysClampedToEntries) {
  const TagCache c(4096, 8);
  EXPECT_EQ(c.ways(), 8u);
  EXPECT_EQ(c.sets(), 512u);
  const TagCache small(3, 8);  // fewer entries than ways: one fully associative set
  EXPECT_EQ(small.ways(), 3u);
  EXPECT_EQ(small.sets(), 1u);
  const TagCache one(1, 8);
  EXPECT_EQ(one.ways(), 1u);
  EXPECT_EQ(one.sets(), 1u);
}

TEST(TagCache, AFullyAssociativeCacheHoldsExactlyItsCapacity) {
  const int entries = 8;
  TagCache c(entries, entries);  // one set of 8 ways
  for (std::uint64_t k = 0; k < entries; ++k) EXPECT_FALSE(c.access(k));
  for (std::uint64_t k = 0; k < entries; ++k) EXPECT_TRUE(c.access(k)) << k;
  EXPECT_FALSE(c.access(entries));  // the ninth evicts the oldest, key 0
  int misses = 0;
  for (std::uint64_t k = 0; k < entries; ++k) misses += c.access(k) ? 0 : 1;
  EXPECT_EQ(misses, entries);  // each re-install evicts the next one needed
}

TEST(TagCache, EvictsTheLeastRecentlyUsedKey) {
  TagCache c(4, 4);  // one set of four ways
  for (std::uint64_t k : {1, 2, 3, 4}) c.access(k);
  c.access(1);                // 2 is now the least recently used
  EXPECT_FALSE(c.access(5));  // evicts 2
  EXPECT_TRUE(c.access(1));
  EXPECT_TRUE(c.access(3));
  EXPECT_TRUE(c.access(4));
  EXPECT_TRUE(c.access(5));
  EXPECT_FALSE(c.access(2));  // it was the victim
}

TEST(TagCache, ACyclicWorkingSetLargerThanTheCacheAlwaysMisses) {
  // LRU's worst case: 9 keys in turn through 8 ways never hit (the key needed is the one evicted).
  TagCache c(8, 8);
  int hits = 0;
  for (int round = 0; round < 10; ++round) {
    for (std::uint64_t k = 0; k < 9; ++k) hits += c.access(k) ? 1 : 0;
  }
  EXPECT_EQ(hits, 0);
}

TEST(TagCache, AWorkingSetThatFitsHitsAfterTheFirstRound) {
  TagCache c(256, 8);
  int misses = 0;
  for (int round = 0; round < 4; ++round) {
    for (std::uint64_t k = 0; k < 16; ++k) misses += c.access(k * 977) ? 0 : 1;
  }
  // 16 keys in 32 sets of 8 ways: only the first round misses (no set gets more than 8).
  EXPECT_EQ(misses, 16);
}

}  // namespace
}  // namespace stepsim::nic
