// The engine on one rank (SerialSync), with 1 to 3 OpenMP threads.
#include "stepsim/pdes/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <span>
#include <utility>
#include <vector>

#include "stepsim/bench/phold.hpp"
#include "tests/support/test_models.hpp"

namespace stepsim::pdes {
namespace {

using testing::FanInTies;
using testing::TokenRing;

RunStats run_serial(Model& model, const LpGraph& graph, int threads, SimTime end,
                    const std::string& partitioner = "block") {
  SerialSync sync;
  EngineOptions opt;
  opt.threads = threads;
  opt.end = end;
  opt.partitioner = partitioner;
  auto engine = Engine::create(graph, sync, opt);
  EXPECT_TRUE(engine.ok());
  return engine.value()->run(model);
}

class EngineThreads : public ::testing::TestWithParam<int> {};

TEST_P(EngineThreads, TokenRingArrivesExactlyWhenComputedByHand) {
  TokenRing ring(12, 5, SimTime::ns(500), SimTime::ns(37));
  const LpGraph g = ring.graph();
  const SimTime end = SimTime::us(200);
  const RunStats st = run_serial(ring, g, GetParam(), end);
  EXPECT_TRUE(st.completed);
  EXPECT_EQ(st.lookahead, SimTime::ns(500));
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < ring.local().size(); ++s) {
    const auto want = ring.expected_arrivals(ring.local()[s], end);
    EXPECT_EQ(ring.seen(s), want) << "LP " << ring.local()[s];
    total += want.size();
  }
  EXPECT_EQ(st.events, total);
  EXPECT_GT(total, 1000u);
}

TEST_P(EngineThreads, TiesAreBrokenBySourceThenSequence) {
  FanInTies fan(9, SimTime::ns(100));
  const LpGraph g = fan.graph();
  run_serial(fan, g, GetParam(), SimTime::us(1));
  const auto want = fan.expected_order();
  EXPECT_EQ(fan.order(), want);
}

TEST_P(EngineThreads, PholdDigestDoesNotDependOnThreads) {
  bench::PholdParams p;
  p.lps = 64;
  p.end = SimTime::us(300);
  p.remote = 0.5;
  bench::Phold reference(p);
  const LpGraph g = reference.graph();
  const RunStats one = run_serial(reference, g, 1, p.end);
  bench::Phold other(p);
  const RunStats many = run_serial(other, g, GetParam(), p.end);
  EXPECT_EQ(one.events, many.events);
  EXPECT_EQ(one.digest, many.digest);
  EXPECT_EQ(one.windows, many.windows);
  if (GetParam() > 1) {
    EXPECT_GT(many.per_rank[0].sent_other_lp, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, EngineThreads, ::testing::Values(1, 2, 3));

// Pairs of LPs (2k, 2k+1) busy together, pair k during [k * 100 us, k * 100 us + 10 us): one
// self-event per LP and microsecond. Split by pairs (cyclic), every window is shared evenly;
// in blocks of pairs, one part does every window's work.
class PairWaves final : public Model {
 public:
  static constexpr LpId kLps = 8;
  static constexpr int kEventsPerLp = 10;
  LpGraph graph() const {
    LpGraph g(kLps, "pair waves");
    for (LpId v = 0; v < kLps; ++v) g.add_edge(v, (v + 1) % kLps, SimTime::us(1));
    g.finalize();
    return g;
  }
  void setup(std::span<const LpId> local) override { local_.assign(local.begin(), local.end()); }
  void init_lp(LpContext& ctx) override {
    ctx.send(ctx.self(), SimTime::us(100) * static_cast<std::int64_t>(ctx.self() / 2), 0, 0);
  }
  void handle(LpContext& ctx, const Event& ev) override {
    if (ev.aux + 1 < kEventsPerLp) ctx.send(ctx.self(), SimTime::us(1), 0, ev.aux + 1);
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t) const override { return 0; }

 private:
  std::vector<LpId> local_;
};

TEST(Engine, WindowParallelismCountsTheBusiestPartPerWindow) {
  PairWaves model;
  const LpGraph g = model.graph();
  SerialSync sync;
  EngineOptions opt;
  opt.end = SimTime::ms(1);
  opt.partition_probe = "cyclic:2,block:2,cyclic:4,block:4";
  auto engine = Engine::create(g, sync, opt);
  ASSERT_TRUE(engine.ok());
  const RunStats st = engine.value()->run(model);
  const std::uint64_t events = PairWaves::kLps * PairWaves::kEventsPerLp;
  EXPECT_EQ(st.events, events);
  EXPECT_EQ(st.critical_events, events);  // one rank: every event is on the critical path
  EXPECT_DOUBLE_EQ(st.window_parallelism(), 1.0);
  ASSERT_EQ(st.probes.size(), 4u);
  // cyclic: the two LPs of a pair on different parts; 2 or 4 parts alike (one pair at a time).
  EXPECT_EQ(st.probes[0].critical_events, events / 2);
  EXPECT_EQ(st.probes[2].critical_events, events / 2);
  // block: a pair's two LPs on one part.
  EXPECT_EQ(st.probes[1].critical_events, events);
  EXPECT_EQ(st.probes[3].critical_events, events);
  EXPECT_EQ(st.probes[1].partitioner, "block");
  EXPECT_EQ(st.probes[3].parts, 4);
}

TEST(Engine, PholdCommitsTheExpectedNumberOfEvents) {
  // The reference case: 1024 LPs x 16 events, lookahead 1us, mean 2us, end 2ms.
  // Renewal theory: each of the 16,384 event chains makes T/mu + (sigma^2 - mu^2)/(2 mu^2)
  // = 1000 - 0.375 events on average (mu = 2us, sigma = 1us), with variance T sigma^2/mu^3 = 250.
  bench::PholdParams p;
  bench::Phold model(p);
  const LpGraph g = model.graph();
  const RunStats st = run_serial(model, g, 1, p.end);
  const double expected = 16384 * 999.625;
  const double sd = std::sqrt(16384 * 250.0);
  EXPECT_NEAR(static_cast<double>(st.events), expected, 5 * sd);
  EXPECT_EQ(st.windows > 1900 && st.windows < 2100, true) << st.windows;
}

TEST(Engine, RunningTwiceGivesTheSameResult) {
  bench::PholdParams p;
  p.lps = 48;
  p.end = SimTime::us(200);
  bench::Phold model(p);
  const LpGraph g = model.graph();
  SerialSync sync;
  EngineOptions opt;
  opt.end = p.end;
  auto engine = Engine::create(g, sync, opt);
  ASSERT_TRUE(engine.ok());
  const RunStats a = engine.value()->run(model);
  bench::Phold again(p);
  const RunStats b = engine.value()->run(again);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.events, b.events);
}

TEST(Engine, DigestChangesWithTheSeed) {
  bench::PholdParams p;
  p.lps = 32;
  p.end = SimTime::us(100);
  bench::Phold a(p);
  p.seed = 2;
  bench::Phold b(p);
  const LpGraph g = a.graph();
  EXPECT_NE(run_serial(a, g, 1, p.end).digest, run_serial(b, g, 1, p.end).digest);
}

TEST(Engine, EmptyStretchesAreSkipped) {
  // One token, delays of 1 ms, lookahead 1 ms: a window per hop, not per microsecond.
  TokenRing ring(2, 1, SimTime::ms(1), SimTime::zero());
  const LpGraph g = ring.graph();
  const RunStats st = run_serial(ring, g, 1, SimTime::ms(10) + SimTime::ps(1));
  EXPECT_EQ(st.events, 10u);
  EXPECT_LE(st.windows, 11u);
}

TEST(Engine, StopRequestEndsAtAWindowBoundary) {
  TokenRing ring(4, 4, SimTime::ns(100), SimTime::zero());
  const LpGraph g = ring.graph();
  Engine::request_stop();
  const RunStats st = run_serial(ring, g, 1, SimTime::ms(1));
  Engine::clear_stop();
  EXPECT_FALSE(st.completed);
  EXPECT_EQ(st.events, 0u);
}

/// Wraps a model: counts events handled before the time of the last window hook.
class HookProbe final : public Model {
 public:
  explicit HookProbe(Model& inner) : inner_(inner) {}
  void setup(std::span<const LpId> lps) override { inner_.setup(lps); }
  void init_lp(LpContext& ctx) override { inner_.init_lp(ctx); }
  void handle(LpContext& ctx, const Event& ev) override {
    if (ev.time.picoseconds() < hook_now.load(std::memory_order_relaxed)) ++early;
    inner_.handle(ctx, ev);
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t s) const override {
    return inner_.lp_digest(s);
  }
  std::atomic<std::int64_t> hook_now{0};
  std::atomic<std::uint64_t> early{0};

 private:
  Model& inner_;
};

class EngineHook : public ::testing::TestWithParam<int> {};

TEST_P(EngineHook, AtWindowSeesEveryWindowAndNothingEarlierHappensAfterIt) {
  bench::PholdParams p;
  p.lps = 64;
  p.end = SimTime::us(300);
  p.remote = 0.5;
  bench::Phold phold(p);
  HookProbe probe(phold);
  const LpGraph g = phold.graph();
  SerialSync sync;
  EngineOptions opt;
  opt.threads = GetParam();
  opt.end = p.end;
  std::vector<std::pair<SimTime, bool>> calls;
  opt.at_window = [&](SimTime now, bool last) {
    calls.emplace_back(now, last);
    probe.hook_now.store(now.picoseconds(), std::memory_order_relaxed);
  };
  auto engine = Engine::create(g, sync, opt);
  ASSERT_TRUE(engine.ok());
  const RunStats st = engine.value()->run(probe);
  EXPECT_TRUE(st.completed);
  EXPECT_EQ(probe.early.load(), 0u);  // every event before `now` was handled before the hook
  ASSERT_EQ(calls.size(), st.windows + 1);
  for (std::size_t i = 0; i + 1 < calls.size(); ++i) {
    EXPECT_FALSE(calls[i].second);
    if (i > 0) {
      EXPECT_LE(calls[i - 1].first, calls[i].first);
    }
  }
  EXPECT_TRUE(calls.back().second);
  EXPECT_EQ(calls.back().first, st.final_time);
  EXPECT_EQ(st.final_time, p.end);
  // The hook does not change the run.
  bench::Phold plain(p);
  EXPECT_EQ(run_serial(plain, g, GetParam(), p.end).digest, st.digest);
}

INSTANTIATE_TEST_SUITE_P(Threads, EngineHook, ::testing::Values(1, 2));

TEST(Engine, AStoppedRunStillCallsTheLastHookOnce) {
  TokenRing ring(4, 4, SimTime::ns(100), SimTime::zero());
  const LpGraph g = ring.graph();
  SerialSync sync;
  EngineOptions opt;
  opt.end = SimTime::ms(1);
  int lasts = 0;
  int others = 0;
  opt.at_window = [&](SimTime, bool last) { ++(last ? lasts : others); };
  auto engine = Engine::create(g, sync, opt);
  ASSERT_TRUE(engine.ok());
  Engine::request_stop();
  const RunStats st = engine.value()->run(ring);
  Engine::clear_stop();
  EXPECT_FALSE(st.completed);
  EXPECT_EQ(lasts, 1);
  EXPECT_EQ(others, 0);
}

// Three LPs in a line with very different lookaheads: LP 0 is linked to LP 1 by 1 us, LP 1 to
// LP 2 by 10 ns, so LP 0 runs up to 1 us ahead of the global time in every window. Each LP ticks
// every 7 ns and sends to a neighbour every 10th tick; LP 2 asks for a stop at `stop` (if set).
class UnevenLookahead final : public Model {
 public:
  explicit UnevenLookahead(SimTime stop) : stop_(stop) {}
  static LpGraph graph() {
    LpGraph g(3, "uneven lookahead");
    g.add_edge(0, 1, SimTime::us(1));
    g.add_edge(1, 2, SimTime::ns(10));
    g.finalize();
    return g;
  }
  void setup(std::span<const LpId>) override {}
  void init_lp(LpContext& ctx) override { ctx.send(ctx.self(), SimTime::zero(), 0, 0); }
  void handle(LpContext& ctx, const Event& ev) override {
    State& st = state_[ctx.self()];
    ++st.events;
    st.latest = std::max(st.latest, ev.time.picoseconds());
    if (ev.kind == 1) return;
    if (ctx.self() == 2 && stop_ > SimTime::zero() && ev.time >= stop_) Engine::request_stop();
    ctx.send(ctx.self(), SimTime::ns(7), 0, ev.aux + 1);
    if (ev.aux % 10 == 0) {
      const LpId to = ctx.self() == 1 ? (ev.aux % 20 == 0 ? 0 : 2) : 1;
      ctx.send(to, to == 0 || ctx.self() == 0 ? SimTime::us(1) : SimTime::ns(10), 1, 0);
    }
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t s) const override {
    return state_[s].events * 1000003u ^ static_cast<std::uint64_t>(state_[s].latest);
  }
  [[nodiscard]] std::int64_t latest() const {
    return std::max({state_[0].latest, state_[1].latest, state_[2].latest});
  }

 private:
  struct alignas(64) State {  // one cache line per LP (threads)
    std::uint64_t events = 0;
    std::int64_t latest = 0;
  };
  SimTime stop_;
  State state_[3];
};

class EngineStop : public ::testing::TestWithParam<int> {};

TEST_P(EngineStop, AStopEndsWhereTheFurthestLpGotAndEqualsARunWithThatEnd) {
  // Before, a stop ended at the window's global time g while LP 0 had handled events up to 1 us
  // later: a file written at the stop held bins after the run's end (CI, cli.bench_fabric_samples).
  UnevenLookahead stopped(SimTime::us(20));
  const LpGraph g = UnevenLookahead::graph();
  const RunStats st = run_serial(stopped, g, GetParam(), SimTime::ms(1));
  Engine::clear_stop();
  EXPECT_FALSE(st.completed);
  EXPECT_LT(stopped.latest(), st.final_time.picoseconds());  // nothing handled at or after the end
  EXPECT_GT(st.final_time, SimTime::us(20) + SimTime::ns(900));  // LP 0 was ~1 us ahead
  // Every event before the end was handled: the same as a run that ends there.
  UnevenLookahead ended(SimTime::zero());
  const RunStats want = run_serial(ended, g, GetParam(), st.final_time);
  EXPECT_TRUE(want.completed);
  EXPECT_EQ(st.events, want.events);
  EXPECT_EQ(st.digest, want.digest);
}

INSTANTIATE_TEST_SUITE_P(Threads, EngineStop, ::testing::Values(1, 2));

TEST(Engine, CreateRejectsBadOptions) {
  LpGraph g(2, "g");
  g.add_edge(0, 1, SimTime::ns(10));
  g.finalize();
  SerialSync sync;
  EngineOptions opt;
  opt.partitioner = "random";
  const auto bad = Engine::create(g, sync, opt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown partitioner 'random'"), std::string::npos);
  opt.partitioner = "block";
  opt.threads = 0;
  EXPECT_FALSE(Engine::create(g, sync, opt).ok());
}

/// Sends to its neighbour with a delay it is given, to break the lookahead on purpose.
class Cheater final : public Model {
 public:
  explicit Cheater(SimTime delay) : delay_(delay) {}
  void setup(std::span<const LpId>) override {}
  void init_lp(LpContext& ctx) override {
    if (ctx.self() == 0) ctx.send(0, SimTime::ns(5), 0);
  }
  void handle(LpContext& ctx, const Event&) override {
    if (ctx.self() == 0) ctx.send(1, delay_, 0);
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t) const override { return 0; }

 private:
  SimTime delay_;
};

TEST(EngineDeathTest, LookaheadViolationNamesBothLpsRanksAndTimes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  LpGraph g(2, "pair");
  g.add_edge(0, 1, SimTime::ns(100));
  g.finalize();
  Cheater cheat(SimTime::ns(40));
  EXPECT_DEATH(run_serial(cheat, g, 1, SimTime::us(1)),
               "lookahead violation: LP 0 \\(rank 0\\) at time 5ns sent an event with a delay "
               "below the lookahead to LP 1 \\(rank 0\\) for time 45ns: delay 40ns < lookahead "
               "100ns");
}

TEST(EngineDeathTest, EventIntoThePastIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  LpGraph g(2, "pair");
  g.add_edge(0, 1, SimTime::ns(100));
  g.finalize();
  Cheater cheat(SimTime::ps(0) - SimTime::ns(1));
  EXPECT_DEATH(run_serial(cheat, g, 1, SimTime::us(1)), "into the past");
}

TEST(EngineDeathTest, AtLookaheadIsAllowed) {
  LpGraph g(2, "pair");
  g.add_edge(0, 1, SimTime::ns(100));
  g.finalize();
  Cheater fair(SimTime::ns(100));
  const RunStats st = run_serial(fair, g, 1, SimTime::us(1));
  EXPECT_EQ(st.events, 2u);  // LP 0's self event, then LP 1's
}

}  // namespace
}  // namespace stepsim::pdes
