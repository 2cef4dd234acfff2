// The engine across MPI ranks (run by ctest at 1, 2 and 4 ranks): exact answers and results that
// are identical to a one-rank run of the same model in the same process.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "stepsim/bench/phold.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "tests/support/test_models.hpp"

namespace stepsim::pdes {
namespace {

using testing::FanInTies;
using testing::TokenRing;

RunStats run_with(Sync& sync, Model& model, const LpGraph& graph, SimTime end, int threads = 1,
                  const std::string& partitioner = "block") {
  EngineOptions opt;
  opt.end = end;
  opt.threads = threads;
  opt.partitioner = partitioner;
  auto engine = Engine::create(graph, sync, opt);
  EXPECT_TRUE(engine.ok());
  return engine.value()->run(model);
}

int world_failures(int local_failures) {
  int total = 0;
  MPI_Allreduce(&local_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

class Partitioners : public ::testing::TestWithParam<const char*> {};

TEST_P(Partitioners, TokenRingArrivalsAreExactOnEveryRank) {
  TokenRing ring(16, 7, SimTime::ns(300), SimTime::ns(11));
  const LpGraph g = ring.graph();
  const SimTime end = SimTime::us(150);
  MpiSync sync;
  const RunStats st = run_with(sync, ring, g, end, 1, GetParam());
  int failures = 0;
  std::uint64_t expected_total = 0;
  for (LpId lp = 0; lp < 16; ++lp) expected_total += ring.expected_arrivals(lp, end).size();
  for (std::size_t s = 0; s < ring.local().size(); ++s) {
    if (ring.seen(s) != ring.expected_arrivals(ring.local()[s], end)) ++failures;
  }
  EXPECT_EQ(world_failures(failures), 0);
  EXPECT_EQ(st.events, expected_total);
  EXPECT_TRUE(st.completed);
}

INSTANTIATE_TEST_SUITE_P(Engine, Partitioners, ::testing::Values("block", "metis"));

TEST(EngineMpi, TieOrderIsTheSameAcrossRanks) {
  FanInTies fan(9, SimTime::ns(100));
  const LpGraph g = fan.graph();
  MpiSync sync;
  run_with(sync, fan, g, SimTime::us(1));
  int failures = 0;
  if (fan.owns_lp0()) {
    const auto want = fan.expected_order();
    failures = fan.order() == want ? 0 : 1;
  }
  EXPECT_EQ(world_failures(failures), 0);
}

TEST(EngineMpi, PholdMatchesAOneRankRunBitForBit) {
  bench::PholdParams p;
  p.lps = 256;
  p.end = SimTime::us(500);
  p.remote = 0.5;
  // Reference: every LP on one rank, in this process.
  bench::Phold serial_model(p);
  const LpGraph g = serial_model.graph();
  SerialSync serial;
  const RunStats ref = run_with(serial, serial_model, g, p.end);
  for (int threads : {1, 2}) {
    bench::Phold model(p);
    MpiSync sync;
    const RunStats st = run_with(sync, model, g, p.end, threads);
    EXPECT_EQ(st.events, ref.events) << threads << " threads";
    EXPECT_EQ(st.digest, ref.digest) << threads << " threads";
    EXPECT_EQ(st.windows, ref.windows) << threads << " threads";
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (ranks > 1 && sync.rank() == 0) {
      // Half of the events are remote and (ranks-1)/ranks of those cross ranks.
      std::uint64_t remote = 0;
      for (const auto& r : st.per_rank) remote += r.sent_remote;
      const double frac = static_cast<double>(remote) / static_cast<double>(st.events);
      EXPECT_NEAR(frac, 0.5 * (ranks - 1) / ranks, 0.02);
      EXPECT_EQ(st.per_rank.size(), static_cast<std::size_t>(ranks));
    }
  }
}

// STEPSIM_SYNC for the MpiSync objects made while it lives; the previous value back after.
class ScopedSyncTransport {
 public:
  explicit ScopedSyncTransport(const char* value) {
    if (const char* v = std::getenv("STEPSIM_SYNC")) saved_ = v;
    setenv("STEPSIM_SYNC", value, 1);
  }
  ~ScopedSyncTransport() {
    if (saved_.empty()) {
      unsetenv("STEPSIM_SYNC");
    } else {
      setenv("STEPSIM_SYNC", saved_.c_str(), 1);
    }
  }
  ScopedSyncTransport(const ScopedSyncTransport&) = delete;
  ScopedSyncTransport& operator=(const ScopedSyncTransport&) = delete;

 private:
  std::string saved_;
};

// Whether every rank of the world runs on this node (what the shared-memory path needs).
bool world_on_one_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 0;
  int world = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_free(&node);
  int all = n == world ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

TEST(EngineMpi, SharedMemoryAndMpiMessagesGiveTheOneRankResult) {
  // The window's synchronisation by shared memory and by MPI messages, with (on two ranks) a
  // batch per rank pair and window above a mailbox's 16,384 events (the shared path's MPI
  // fallback): 131,072 events in flight, all sent to random LPs, half processed per window.
  bench::PholdParams p;
  p.lps = 4096;
  p.events_per_lp = 32;
  p.remote = 1.0;
  p.end = SimTime::us(12);
  bench::Phold serial_model(p);
  const LpGraph g = serial_model.graph();
  SerialSync serial;
  const RunStats ref = run_with(serial, serial_model, g, p.end);
  const bool one_node = world_on_one_node();
  for (const char* transport : {"shm", "mpi"}) {
    const ScopedSyncTransport env(transport);
    for (const char* partitioner : {"block", "cyclic"}) {
      bench::Phold model(p);
      MpiSync sync;
      const RunStats st = run_with(sync, model, g, p.end, 1, partitioner);
      const std::string what = std::string(transport) + ", " + partitioner;
      EXPECT_EQ(st.events, ref.events) << what;
      EXPECT_EQ(st.digest, ref.digest) << what;
      EXPECT_EQ(st.windows, ref.windows) << what;
      EXPECT_EQ(st.critical_events > 0, ref.critical_events > 0) << what;
      const bool want_shm = std::string(transport) == "shm" && sync.size() > 1 && one_node;
      EXPECT_EQ(world_failures(sync.shared_memory() == want_shm ? 0 : 1), 0) << what;
      if (sync.size() == 2 && sync.rank() == 0) {
        // Events crossing a rank pair per window, on average: above the largest mailbox (two
        // ranks; with more, each pair carries fewer).
        std::uint64_t remote = 0;
        for (const auto& r : st.per_rank) remote += r.sent_remote;
        const auto pairs = static_cast<double>(sync.size() * (sync.size() - 1));
        EXPECT_GT(static_cast<double>(remote) / pairs / static_cast<double>(st.windows), 16384.0)
            << what;
      }
    }
  }
}

TEST(EngineMpi, ExchangeIsSparseOnARing) {
  // A ring cut into contiguous blocks: each rank shares cables with its two ring neighbours only,
  // so it exchanges with at most 2 ranks whatever the rank count (not with all of them).
  TokenRing ring(64, 4, SimTime::ns(200), SimTime::zero());
  const LpGraph g = ring.graph();
  MpiSync sync;
  EngineOptions opt;
  opt.end = SimTime::us(20);
  auto engine = Engine::create(g, sync, opt);
  ASSERT_TRUE(engine.ok());
  const int ranks = sync.size();
  const std::size_t want = ranks == 1 ? 0 : (ranks == 2 ? 1 : 2);
  EXPECT_EQ(world_failures(engine.value()->neighbour_ranks().size() == want ? 0 : 1), 0);
  const RunStats st = engine.value()->run(ring);
  int failures = 0;
  for (std::size_t s = 0; s < ring.local().size(); ++s) {
    if (ring.seen(s) != ring.expected_arrivals(ring.local()[s], opt.end)) ++failures;
  }
  EXPECT_EQ(world_failures(failures), 0);
  EXPECT_GT(st.events, 0u);
}

TEST(EngineMpi, AllGatherConcatenatesEveryRanksRecordsInRankOrder) {
  // Rank r passes r + 1 records of 12 bytes (two words each); every rank gets all of them, rank
  // by rank, whole.
  struct Rec {
    std::uint32_t rank = 0;
    std::uint32_t i = 0;
    std::uint32_t tag = 0;
  };
  MpiSync sync;
  const auto me = static_cast<std::uint32_t>(sync.rank());
  std::vector<Rec> mine;
  for (std::uint32_t i = 0; i <= me; ++i) mine.push_back(Rec{me, i, 1000 * me + i});
  const std::vector<Rec> all = sync.all_gather(mine);
  int failures = 0;
  std::size_t k = 0;
  for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(sync.size()); ++r) {
    for (std::uint32_t i = 0; i <= r; ++i, ++k) {
      if (k >= all.size() || all[k].rank != r || all[k].i != i || all[k].tag != 1000 * r + i) {
        ++failures;
      }
    }
  }
  if (all.size() != k) ++failures;
  EXPECT_EQ(world_failures(failures), 0);
}

TEST(EngineMpi, StopVoteOfEveryRankStopsWhereOneRankWould) {
  // Each rank votes once every LP it holds has seen 6 tokens: the engine stops at the first
  // window where that holds for every LP, wherever the LPs are, so the end, the events and the
  // digest are a one-rank run's. A vote no rank ever gives lets the run complete.
  TokenRing serial_ring(16, 5, SimTime::ns(300), SimTime::ns(11));
  const LpGraph g = serial_ring.graph();
  const auto voter = [](const TokenRing& ring) {
    return [&ring] {
      for (std::size_t s = 0; s < ring.local().size(); ++s) {
        if (ring.seen(s).size() < 6) return false;
      }
      return true;
    };
  };
  EngineOptions opt;
  opt.end = SimTime::us(150);
  opt.stop_vote = voter(serial_ring);
  SerialSync serial;
  const RunStats ref = Engine::create(g, serial, opt).value()->run(serial_ring);
  Engine::clear_stop();
  EXPECT_TRUE(ref.stopped_by_vote);
  EXPECT_FALSE(ref.completed);
  EXPECT_LT(ref.final_time, opt.end);
  for (const char* transport : {"shm", "mpi"}) {
    const ScopedSyncTransport env(transport);
    TokenRing ring(16, 5, SimTime::ns(300), SimTime::ns(11));
    opt.stop_vote = voter(ring);
    MpiSync sync;
    const RunStats st = Engine::create(g, sync, opt).value()->run(ring);
    Engine::clear_stop();
    EXPECT_TRUE(st.stopped_by_vote) << transport;
    EXPECT_EQ(st.final_time, ref.final_time) << transport;
    EXPECT_EQ(st.events, ref.events) << transport;
    EXPECT_EQ(st.digest, ref.digest) << transport;
  }
  TokenRing ring(16, 5, SimTime::ns(300), SimTime::ns(11));
  MpiSync sync;
  opt.stop_vote = [&sync] { return sync.rank() != 0; };
  const RunStats st = Engine::create(g, sync, opt).value()->run(ring);
  Engine::clear_stop();
  EXPECT_FALSE(st.stopped_by_vote);
  EXPECT_TRUE(st.completed);
}

TEST(EngineMpi, StopRequestOnOneRankStopsAll) {
  TokenRing ring(8, 8, SimTime::ns(100), SimTime::zero());
  const LpGraph g = ring.graph();
  MpiSync sync;
  if (sync.rank() == sync.size() - 1) Engine::request_stop();
  const RunStats st = run_with(sync, ring, g, SimTime::ms(1));
  Engine::clear_stop();
  EXPECT_FALSE(st.completed);
}

}  // namespace
}  // namespace stepsim::pdes
