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
