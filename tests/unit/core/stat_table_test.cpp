// Statistics declared once (core/stat_table.hpp): the reduction over two ranks, the combination
// of records, the digest feed and the JSON object all follow the one table.
#include "stepsim/core/stat_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/cli/stat_json.hpp"
#include "stepsim/collective/sharp.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/nic/rdma_stats.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim {
namespace {

struct Counters {
  std::uint64_t bytes = 0;
  std::int64_t peak = 0;
  std::int64_t first_ps = -1;
  std::int64_t last_ps = -1;
  std::uint64_t unhashed = 0;
};
constexpr auto stat_table(std::type_identity<Counters>) {
  using S = Counters;
  return std::array{stat::sum("bytes", "B", &S::bytes, stat::kDigest),
                    stat::max("peak", "B", &S::peak, stat::kDigest),
                    stat::min("first_ps", "ps", &S::first_ps, stat::kDigest),
                    stat::max("last_ps", "ps", &S::last_ps),
                    stat::sum("unhashed", "", &S::unhashed)};
}

// Two ranks in one process: the first call (rank 1) records what it passes, the second (rank 0)
// reduces its own buffers with those, as MPI_Allreduce would.
class TwoRankSync final : public pdes::Sync {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 2; }
  void set_neighbours(std::span<const int>) override {}
  void exchange(std::span<std::vector<pdes::Event>>, std::vector<pdes::Event>&) override {}
  void allreduce_min(std::span<std::int64_t> v) override {
    if (recording_) {
      mins_.emplace_back(v.begin(), v.end());
      return;
    }
    const std::vector<std::int64_t>& o = mins_.at(next_min_++);
    ASSERT_EQ(o.size(), v.size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::min(v[k], o[k]);
  }
  void allreduce_sum(std::span<std::uint64_t> v) override {
    if (recording_) {
      sums_.emplace_back(v.begin(), v.end());
      return;
    }
    const std::vector<std::uint64_t>& o = sums_.at(next_sum_++);
    ASSERT_EQ(o.size(), v.size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] += o[k];
  }
  std::vector<double> gather(std::span<const double> mine) override {
    return {mine.begin(), mine.end()};
  }
  /// Rank 1 has passed its buffers; the next calls are rank 0's.
  void rank1_done() { recording_ = false; }

 private:
  bool recording_ = true;
  std::vector<std::vector<std::int64_t>> mins_;
  std::vector<std::vector<std::uint64_t>> sums_;
  std::size_t next_min_ = 0;
  std::size_t next_sum_ = 0;
};

template <class S>
std::vector<S> reduce_two(std::vector<S> rank0, std::vector<S> rank1) {
  TwoRankSync sync;
  stat::allreduce(sync, rank1);
  sync.rank1_done();
  stat::allreduce(sync, rank0);
  return rank0;
}

TEST(StatTable, TwoRanksReduceAsDeclared) {
  // Record 0 is counted on both ranks, record 1 on rank 1 only, record 2 nowhere.
  std::vector<Counters> r0(3);
  std::vector<Counters> r1(3);
  r0[0] = {100, 7, 50, 60, 1};
  r1[0] = {23, 9, 40, 55, 2};
  r1[1] = {5, 3, -1, 80, 0};
  const std::vector<Counters> out = reduce_two(r0, r1);
  EXPECT_EQ(out[0].bytes, 123u);   // sum
  EXPECT_EQ(out[0].peak, 9);       // max
  EXPECT_EQ(out[0].first_ps, 40);  // min
  EXPECT_EQ(out[0].last_ps, 60);   // max
  EXPECT_EQ(out[0].unhashed, 3u);  // sum
  EXPECT_EQ(out[1].bytes, 5u);     // owned by one rank: its values
  EXPECT_EQ(out[1].first_ps, -1);  // none on either rank stays none
  EXPECT_EQ(out[1].last_ps, 80);
  EXPECT_EQ(out[2].first_ps, -1);  // owned by none: the defaults
  EXPECT_EQ(out[2].last_ps, -1);
  EXPECT_EQ(out[2].bytes, 0u);
}

TEST(StatTable, NoneLosesToAnyTimeInAMinimum) {
  std::vector<Counters> r0(1);
  std::vector<Counters> r1(1);
  r0[0].first_ps = -1;
  r1[0].first_ps = 0;
  EXPECT_EQ(reduce_two(r0, r1)[0].first_ps, 0);
  EXPECT_EQ(reduce_two(r1, r0)[0].first_ps, 0);
}

TEST(StatTable, PortStatsGatherOverTwoRanksAsTheOneRankRun) {
  // A port is counted on one rank only; whichever rank it is, both get its exact counters.
  fabric::PortStats p;
  p.bytes = 4096;
  p.max_queue = 9000;
  p.first_mark_ps = 1234;
  p.last_pause_ps = 99;
  const std::vector<fabric::PortStats> a = reduce_two<fabric::PortStats>({p, {}}, {{}, p});
  for (const fabric::PortStats& x : a) {
    EXPECT_EQ(x.bytes, 4096u);
    EXPECT_EQ(x.max_queue, 9000);
    EXPECT_EQ(x.first_mark_ps, 1234);
    EXPECT_EQ(x.first_pause_ps, -1);
    EXPECT_EQ(x.last_pause_ps, 99);
  }
}

TEST(StatTable, OwnedValuesAndTimesGatherOverTwoRanks) {
  TwoRankSync sync;
  std::vector<std::int64_t> v1 = {0, 7, 0};
  std::vector<std::int64_t> t1 = {-1, 30, -1, 5};
  stat::gather_owned(sync, v1);
  stat::gather_earliest(sync, t1);
  sync.rank1_done();
  std::vector<std::int64_t> v0 = {3, 0, 0};
  std::vector<std::int64_t> t0 = {0, -1, -1, 9};
  stat::gather_owned(sync, v0);
  stat::gather_earliest(sync, t0);
  EXPECT_EQ(v0, (std::vector<std::int64_t>{3, 7, 0}));
  EXPECT_EQ(t0, (std::vector<std::int64_t>{0, 30, -1, 5}));  // time 0 is a time, not "none"
}

TEST(StatTable, CombineFollowsTheDeclaredReductions) {
  Counters a{10, 4, 30, 5, 1};
  stat::combine(a, Counters{5, 8, 20, 2, 1});
  EXPECT_EQ(a.bytes, 15u);
  EXPECT_EQ(a.peak, 8);
  EXPECT_EQ(a.first_ps, 20);
  EXPECT_EQ(a.last_ps, 5);
  stat::combine(a, Counters{});  // the defaults change nothing
  EXPECT_EQ(a.first_ps, 20);
  EXPECT_EQ(a.bytes, 15u);
}

TEST(StatTable, DigestHashesTheFlaggedStatisticsInTableOrder) {
  const Counters c{1, 2, 3, 4, 5};
  const std::uint64_t want = hash_combine(hash_combine(hash_combine(0, 1), 2), 3);
  EXPECT_EQ(stat::digest(0, c), want);
  Counters d = c;
  d.unhashed = 99;  // not flagged
  d.last_ps = 77;   // not flagged
  EXPECT_EQ(stat::digest(0, d), want);
  d.peak = 3;
  EXPECT_NE(stat::digest(0, d), want);
}

TEST(StatTable, EveryDeclaredStatisticIsAJsonKey) {
  const Counters c{1, -2, 3, 4, 5};
  const nlohmann::json j = cli::stat_json(c);
  EXPECT_EQ(j.size(), stat::kCount<Counters>);
  EXPECT_EQ(j.at("bytes").get<std::uint64_t>(), 1u);
  EXPECT_EQ(j.at("peak").get<std::int64_t>(), -2);
  EXPECT_EQ(j.at("first_ps").get<std::int64_t>(), 3);
  EXPECT_EQ(j.at("unhashed").get<std::uint64_t>(), 5u);
  fabric::PortStats p;
  p.first_mark_ps = 12;
  const nlohmann::json pj = cli::stat_json(p);
  EXPECT_EQ(pj.size(), stat::kCount<fabric::PortStats>);
  EXPECT_EQ(pj.at("first_mark_ps").get<std::int64_t>(), 12);
  EXPECT_EQ(pj.at("last_pause_ps").get<std::int64_t>(), -1);
}

// Every 64-bit member of S is declared, each under its own name.
template <class S>
void expect_complete_table() {
  std::vector<std::string> names;
  stat::for_each<S>([&](const stat::Stat<S>& f) { names.emplace_back(f.name); });
  EXPECT_EQ(names.size() * sizeof(std::uint64_t), sizeof(S));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

TEST(StatTable, TablesDeclareEveryMemberOnce) {
  expect_complete_table<fabric::PortStats>();
  expect_complete_table<fabric::FlowRecord>();
  expect_complete_table<nic::QpStats>();
  expect_complete_table<nic::NicStats>();
  expect_complete_table<nic::MessageTrace>();
  expect_complete_table<collective::SharpSwitchStats>();
  expect_complete_table<collective::ConnectionFlow>();
}

TEST(StatTable, PortDigestFeedIsTheGoldenOne) {
  // The order the golden scenarios' digests were made with (before the table): thirteen
  // counters, bytes to max_queue.
  fabric::PortStats s;
  std::uint64_t v = 1;
  stat::for_each<fabric::PortStats>([&](const stat::Stat<fabric::PortStats>& f) {
    f.set(s, static_cast<std::int64_t>(v++ * 1000003));
  });
  std::uint64_t h = 0;
  for (std::uint64_t x :
       {s.bytes, s.packets, s.ecn_marks, s.pause_sent, s.pause_received, s.drops_buffer,
        s.drops_fec, s.drops_link_down, s.drops_unroutable, s.fec_corrected, s.fec_uncorrectable,
        static_cast<std::uint64_t>(s.paused_ps), static_cast<std::uint64_t>(s.max_queue)}) {
    h = hash_combine(h, x);
  }
  EXPECT_EQ(stat::digest(0, s), h);
}

}  // namespace
}  // namespace stepsim
