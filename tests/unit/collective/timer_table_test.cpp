// Typed timer payloads over the NIC's integer tags (stepsim/collective/timer_table.hpp): every
// field comes back at full width, slots are reused once fired, and servers' tables are independent.
#include "stepsim/collective/timer_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stepsim/collective/algorithm_run.hpp"

namespace stepsim::collective {
namespace {

TEST(TimerTable, PayloadsRoundTripAtFullWidth) {
  // Values beyond the old bit-packed tags: a GPU index above 8 bits, a channel above 6, a piece
  // above 14, a tree node above 26.
  TimerTable<TimerPayload> t(2);
  const std::vector<TimerPayload> in = {
      {.event = 3, .index = 300, .edge = 3, .channel = 64, .piece = std::int64_t{1} << 40},
      {.event = 1, .index = (1u << 26) + 5, .edge = 2, .channel = 0, .piece = 16384},
      {.event = 2, .index = 0xfffffffeu, .edge = 0, .channel = 0xffffffffu, .piece = -1},
  };
  std::vector<std::uint32_t> tags;
  for (const TimerPayload& p : in) tags.push_back(t.put(1, p));
  EXPECT_EQ(t.pending(1), in.size());
  EXPECT_EQ(t.pending(0), 0u);
  // Fired in another order than scheduled: each tag brings back its own payload.
  EXPECT_EQ(t.take(1, tags[2]), in[2]);
  EXPECT_EQ(t.take(1, tags[0]), in[0]);
  EXPECT_EQ(t.take(1, tags[1]), in[1]);
  EXPECT_EQ(t.pending(1), 0u);
}

TEST(TimerTable, SlotsAreReusedOnceFiredAndServersAreIndependent) {
  TimerTable<TimerPayload> t(3);
  const std::uint32_t a = t.put(0, {.event = 1, .index = 7});
  const std::uint32_t b = t.put(0, {.event = 1, .index = 8});
  EXPECT_NE(a, b);
  // Server 2's first timer does not see server 0's slots.
  const std::uint32_t c = t.put(2, {.event = 2, .index = 9});
  EXPECT_EQ(c, 0u);
  EXPECT_EQ(t.take(0, a).index, 7u);
  // The freed slot is taken again: the table stays as large as the timers pending at once.
  const std::uint32_t d = t.put(0, {.event = 1, .index = 10});
  EXPECT_EQ(d, a);
  EXPECT_EQ(t.take(0, d).index, 10u);
  EXPECT_EQ(t.take(0, b).index, 8u);
  EXPECT_EQ(t.take(2, c).index, 9u);
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t tag = t.put(1, {.event = 1, .index = static_cast<std::uint32_t>(i)});
    EXPECT_EQ(tag, 0u);  // one pending at a time: always the same slot
    EXPECT_EQ(t.take(1, tag).index, static_cast<std::uint32_t>(i));
  }
}

}  // namespace
}  // namespace stepsim::collective
