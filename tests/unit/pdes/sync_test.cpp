#include "stepsim/pdes/sync.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace stepsim::pdes {
namespace {

struct Rec {  // 12 bytes: two words each, the second half-filled
  std::uint32_t rank = 0;
  std::uint32_t i = 0;
  std::uint32_t tag = 0;
};

// Rank 1 of 2 in one process: rank 0's part of each allreduce_sum is played back (first the
// counts, then rank 0's words at the front of the gathered buffer), as MPI_Allreduce would add
// it.
class SecondOfTwoSync final : public Sync {
 public:
  explicit SecondOfTwoSync(std::vector<std::uint64_t> rank0_words)
      : rank0_(std::move(rank0_words)) {}
  [[nodiscard]] int rank() const override { return 1; }
  [[nodiscard]] int size() const override { return 2; }
  void set_neighbours(std::span<const int>) override {}
  void exchange(std::span<std::vector<Event>>, std::vector<Event>&) override {}
  void allreduce_min(std::span<std::int64_t>) override {}
  void allreduce_sum(std::span<std::uint64_t> v) override {
    if (calls_++ == 0) {
      ASSERT_EQ(v.size(), 2u);
      EXPECT_EQ(v[0], 0u);  // rank 0's count is rank 0's to add
      v[0] += rank0_.size();
      return;
    }
    ASSERT_GE(v.size(), rank0_.size());
    for (std::size_t k = 0; k < rank0_.size(); ++k) {
      EXPECT_EQ(v[k], 0u);  // rank 1 leaves rank 0's place empty
      v[k] += rank0_[k];
    }
  }
  std::vector<double> gather(std::span<const double> mine) override {
    return {mine.begin(), mine.end()};
  }

 private:
  std::vector<std::uint64_t> rank0_;
  int calls_ = 0;
};

std::vector<std::uint64_t> words_of(const std::vector<Rec>& recs) {
  std::vector<std::uint64_t> w;
  for (const Rec& r : recs) {
    std::uint64_t two[2] = {0, 0};
    std::memcpy(two, &r, sizeof r);
    w.push_back(two[0]);
    w.push_back(two[1]);
  }
  return w;
}

TEST(SyncAllGather, OneRankGetsItsOwnRecordsBack) {
  SerialSync sync;
  const std::vector<Rec> mine = {{0, 0, 7}, {0, 1, 8}, {0, 2, 9}};
  const std::vector<Rec> all = sync.all_gather(mine);
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t k = 0; k < all.size(); ++k) EXPECT_EQ(all[k].tag, mine[k].tag);
  EXPECT_TRUE(sync.all_gather(std::vector<Rec>{}).empty());
}

TEST(SyncAllGather, ASecondRanksRecordsComeAfterTheFirstRanks) {
  const std::vector<Rec> rank0 = {{0, 0, 100}, {0, 1, 101}};
  const std::vector<Rec> rank1 = {{1, 0, 200}, {1, 1, 201}, {1, 2, 202}};
  SecondOfTwoSync sync(words_of(rank0));
  const std::vector<Rec> all = sync.all_gather(rank1);
  ASSERT_EQ(all.size(), 5u);
  const std::uint32_t want[5] = {100, 101, 200, 201, 202};
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(all[k].tag, want[k]) << k;
    EXPECT_EQ(all[k].rank, k < 2 ? 0u : 1u) << k;
  }
}

}  // namespace
}  // namespace stepsim::pdes
