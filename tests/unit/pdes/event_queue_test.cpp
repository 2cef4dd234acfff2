#include "stepsim/pdes/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stepsim/pdes/rng.hpp"

namespace stepsim::pdes {
namespace {

Event make(std::int64_t t, LpId src, std::uint64_t seq) {
  Event e;
  e.time = SimTime::ps(t);
  e.src = src;
  e.seq = seq;
  return e;
}

TEST(EventOrder, TimeThenSourceThenSequence) {
  EXPECT_TRUE(event_before(make(1, 9, 9), make(2, 0, 0)));
  EXPECT_TRUE(event_before(make(5, 1, 9), make(5, 2, 0)));
  EXPECT_TRUE(event_before(make(5, 3, 1), make(5, 3, 2)));
  EXPECT_FALSE(event_before(make(5, 3, 2), make(5, 3, 2)));  // strict
  EXPECT_FALSE(event_before(make(6, 0, 0), make(5, 9, 9)));
}

TEST(EventQueue, PopsInTotalOrderForAnyInsertionOrder) {
  Rng rng(7, 1, 0);
  std::vector<Event> events;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    // Few distinct times and sources, so that ties on time and on (time, src) are common.
    events.push_back(make(rng.below(20), rng.below(4), i));
  }
  std::vector<Event> sorted = events;
  std::sort(sorted.begin(), sorted.end(), event_before);
  for (int shuffle = 0; shuffle < 3; ++shuffle) {
    for (std::size_t i = events.size(); i > 1; --i) {
      std::swap(events[i - 1], events[rng.below(static_cast<std::uint32_t>(i))]);
    }
    EventQueue q;
    for (const Event& e : events) q.push(e);
    ASSERT_EQ(q.size(), events.size());
    for (const Event& want : sorted) {
      ASSERT_EQ(q.next_time(), want.time);
      const Event got = q.pop();
      ASSERT_EQ(got.src, want.src);
      ASSERT_EQ(got.seq, want.seq);
    }
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.next_time(), SimTime::never());
  }
}

TEST(EventQueue, InterleavedPushAndPopKeepOrder) {
  EventQueue q;
  Rng rng(3, 2, 0);
  std::int64_t last = -1;
  std::uint64_t seq = 0;
  for (int i = 0; i < 64; ++i) q.push(make(rng.below(1000), 0, seq++));
  for (int i = 0; i < 20000; ++i) {
    const Event e = q.pop();
    ASSERT_GE(e.time.picoseconds(), last);
    last = e.time.picoseconds();
    q.push(make(last + 1 + rng.below(1000), 0, seq++));  // hold model: never in the past
  }
}

// replace_top and pop reuse slab slots; ties on (time, src) are broken by seq read through the
// slot, so the order must survive slots being recycled in any pattern. A sorted multiset is the
// reference.
TEST(EventQueue, ReplaceTopAndSlotReuseKeepTheTotalOrder) {
  EventQueue q;
  std::vector<Event> ref;  // the same pending set, kept sorted
  Rng rng(11, 3, 0);
  std::uint64_t seq = 0;
  auto insert_ref = [&](const Event& e) {
    ref.insert(std::upper_bound(ref.begin(), ref.end(), e, event_before), e);
  };
  std::int64_t now = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::uint32_t op = rng.below(4);
    // Times and sources from tiny ranges: ties on (time, src) are the common case.
    const Event e = make(now + rng.below(3), rng.below(2), seq++);
    if (q.empty() || op == 0) {
      q.push(e);
      insert_ref(e);
    } else if (op == 1) {
      const Event got = q.pop();
      ASSERT_EQ(got.seq, ref.front().seq);
      now = got.time.picoseconds();
      ref.erase(ref.begin());
    } else {
      // Handler of the top event sends one to itself (never into the past).
      ASSERT_EQ(q.top().seq, ref.front().seq);
      now = q.top().time.picoseconds();
      const Event self = make(now + rng.below(3), rng.below(2), seq++);
      q.replace_top(self);
      ref.erase(ref.begin());
      insert_ref(self);
    }
    ASSERT_EQ(q.size(), ref.size());
    ASSERT_EQ(q.next_time(), ref.empty() ? SimTime::never() : ref.front().time);
  }
  // for_each visits exactly the pending events.
  std::vector<std::uint64_t> seen;
  q.for_each([&](const Event& e) { seen.push_back(e.seq); });
  std::vector<std::uint64_t> want;
  for (const Event& e : ref) want.push_back(e.seq);
  std::sort(seen.begin(), seen.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(seen, want);
  while (!q.empty()) {
    ASSERT_EQ(q.pop().seq, ref.front().seq);
    ref.erase(ref.begin());
  }
}

// Once the queue has held N events, cycling through at most N pending events allocates nothing.
TEST(EventQueue, StorageStopsGrowingOnceWarm) {
  EventQueue q;
  std::uint64_t seq = 0;
  for (int i = 0; i < 1000; ++i) q.push(make(i, 0, seq++));
  while (!q.empty()) q.pop();
  const std::size_t warm = q.storage_bytes();
  EXPECT_GE(warm, 1000 * sizeof(Event));
  Rng rng(5, 1, 0);
  for (int i = 0; i < 1000; ++i) q.push(make(rng.below(50), rng.below(3), seq++));
  for (int i = 0; i < 100000; ++i) {
    const Event e = q.pop();
    q.push(make(e.time.picoseconds() + rng.below(50), rng.below(3), seq++));
  }
  EXPECT_EQ(q.size(), 1000u);
  EXPECT_EQ(q.storage_bytes(), warm);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.storage_bytes(), warm);
}

TEST(EventPayload, RoundTripsPlainData) {
  struct P {
    std::uint64_t a;
    double b;
    std::uint32_t c;
  };
  Event e;
  e.set_payload(P{42, 2.5, 7});
  const P p = e.payload_as<P>();
  EXPECT_EQ(p.a, 42u);
  EXPECT_EQ(p.b, 2.5);
  EXPECT_EQ(p.c, 7u);
}

}  // namespace
}  // namespace stepsim::pdes
