// StageTimeline: a pipeline stage's units as reservations (latency, occupancy, parallel units).
#include "src/nic/stage_timeline.hpp"

#include <gtest/gtest.h>

namespace stepsim::nic {
namespace {

TEST(StageTimeline, AnIdleStageReturnsStartPlusItsLatency) {
  StageTimeline t;
  const Stage st{SimTime::ns(100), SimTime::ns(10), 1};
  EXPECT_EQ(t.reserve(st, SimTime::ns(5)), SimTime::ns(105));
  EXPECT_EQ(t.free_at(0), SimTime::ns(15));  // busy for its occupancy only
}

TEST(StageTimeline, TheLatencyIsAtLeastTheOccupancy) {
  StageTimeline t;
  const Stage st{SimTime::ns(2), SimTime::ns(30), 1};
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(30));
}

TEST(StageTimeline, OneUnitSerializesItemsAtItsOccupancy) {
  StageTimeline t;
  const Stage st{SimTime::ns(100), SimTime::ns(10), 1};
  // Three items at once: they leave 10 ns apart (the stage's throughput), each 100 ns after it
  // got the unit.
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(100));
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(110));
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(120));
  // An item after the unit freed does not wait.
  EXPECT_EQ(t.reserve(st, SimTime::ns(500)), SimTime::ns(600));
}

TEST(StageTimeline, TwoUnitsTakeTwoItemsAtOnceAndTheFirstFreeUnitNext) {
  StageTimeline t;
  const Stage st{SimTime::ns(50), SimTime::ns(20), 2};
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(50));
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(50));
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(70));  // waits for a unit
  EXPECT_EQ(t.free_at(0), SimTime::ns(40));
  EXPECT_EQ(t.free_at(1), SimTime::ns(20));
}

TEST(StageTimeline, ACellHoldsTheUnitForAllItsPacketsButLeavesWithTheFirst) {
  StageTimeline t;
  const Stage st{SimTime::ns(10), SimTime::ns(10), 1};
  EXPECT_EQ(t.reserve(st, SimTime::zero(), 4), SimTime::ns(10));
  EXPECT_EQ(t.free_at(0), SimTime::ns(40));
  EXPECT_EQ(t.reserve(st, SimTime::zero()), SimTime::ns(50));
}

TEST(StageTimeline, StageAtClockConvertsCyclesAtTheNicClock) {
  NicParams p;
  p.clock_mhz = 500;  // 2 ns per cycle
  const Stage st = Stage::at_clock(StageParams{SimTime::ns(7), 4, 3}, p);
  EXPECT_EQ(st.latency, SimTime::ns(7));
  EXPECT_EQ(st.occupancy, SimTime::ns(8));
  EXPECT_EQ(st.units, 3);
}

}  // namespace
}  // namespace stepsim::nic
