#include "stepsim/fabric/fabric_samples.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace stepsim::fabric {
namespace {

const SimTime kBin = SimTime::us(1);
const SimTime kWire = SimTime::ns(1);  // short frames: each within one bin

SimTime at(double bins) {
  return SimTime::ps(static_cast<std::int64_t>(bins * static_cast<double>(kBin.picoseconds())));
}

// Two local ports on two nodes: local 0 is global port 7 (node slot 0), local 1 is global 3
// (node slot 1).
FabricSamples make() {
  FabricSamples s(kBin);
  s.setup({7, 3}, {0, 1}, 2);
  return s;
}

std::vector<SampleRow> take(FabricSamples& s) {
  std::vector<SampleRow> r = s.rows();
  s.rows().clear();
  return r;
}

TEST(FabricSamples, APauseAcrossBinsSplitsByBinAndAddsUpToItsLength) {
  FabricSamples s = make();
  s.on_paused(0, at(1.5), true);
  s.on_paused(0, at(4.25), false);
  s.drain(at(10), true);
  const std::vector<SampleRow> rows = take(s);
  ASSERT_EQ(rows.size(), 4u);
  const std::int64_t bin = kBin.picoseconds();
  const std::int64_t want[] = {bin / 2, bin, bin, bin / 4};
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].bin, i + 1);
    EXPECT_EQ(rows[i].port, 7u);
    EXPECT_EQ(rows[i].paused_ps, want[i]);
    sum += rows[i].paused_ps;
  }
  EXPECT_EQ(sum, (at(4.25) - at(1.5)).picoseconds());
}

TEST(FabricSamples, TwoPausedClassesCountTwice) {
  FabricSamples s = make();
  s.on_paused(0, at(0.25), true);
  s.on_paused(0, at(0.5), true);
  s.on_paused(0, at(0.75), false);
  s.on_paused(0, at(0.75), false);
  s.drain(at(1), true);
  const std::vector<SampleRow> rows = take(s);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].paused_ps, at(0.5).picoseconds() + at(0.25).picoseconds());
}

TEST(FabricSamples, AQueueCountsInEveryBinItSpansFromItsBacklogAtTheBinStart) {
  FabricSamples s = make();
  s.on_enqueue(1, at(0.5), 1000, false);
  s.on_enqueue(1, at(0.6), 3000, false);
  s.on_transmit(1, at(0.7), 1000, kWire, 2000);  // 1000 B left the queue: 2000 B stay
  s.on_transmit(1, at(2.5), 1500, kWire, 500);   // the first event after two bins
  s.on_transmit(1, at(2.6), 500, kWire, 0);
  s.on_transmit(1, at(7.5), 100, kWire, 0);  // idle bins in between leave no rows
  s.drain(at(8), true);
  const std::vector<SampleRow> rows = take(s);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].bin, 0u);
  EXPECT_EQ(rows[0].queue_max_bytes, 3000u);
  EXPECT_EQ(rows[0].bytes, 1000u);
  EXPECT_EQ(rows[1].bin, 1u);
  EXPECT_EQ(rows[1].queue_max_bytes, 2000u);
  EXPECT_EQ(rows[1].bytes, 0u);
  EXPECT_EQ(rows[2].bin, 2u);
  EXPECT_EQ(rows[2].queue_max_bytes, 2000u);
  EXPECT_EQ(rows[2].bytes, 2000u);
  EXPECT_EQ(rows[3].bin, 7u);
  EXPECT_EQ(rows[3].queue_max_bytes, 0u);
  EXPECT_EQ(rows[3].bytes, 100u);
  for (const SampleRow& r : rows) EXPECT_EQ(r.port, 3u);
}

TEST(FabricSamples, AFrameIsSpreadOverTheBinsItsSerializationSpans) {
  FabricSamples s = make();
  s.on_transmit(0, at(0.75), 1000, at(0.5), 0);  // 0.75 .. 1.25: half in bin 0, half in bin 1
  s.on_transmit(0, at(1.5), 999, at(3), 0);      // 1.5 .. 4.5: 1/6, 1/3, 1/3, 1/6
  s.drain(at(2), false);  // bin 1 closes while the second frame is on the wire
  std::vector<SampleRow> rows = take(s);
  s.on_transmit(1, at(4.9), 7, at(10), 0);  // still on the wire when the run ends at 6 us
  s.drain(at(6), true);
  for (const SampleRow& r : take(s)) rows.push_back(r);
  std::vector<std::uint64_t> port7;
  std::uint64_t port3 = 0;
  for (const SampleRow& r : rows) {
    if (r.port == 7) port7.push_back(r.bytes);
    if (r.port == 3) port3 += r.bytes;
  }
  ASSERT_EQ(port7.size(), 5u);
  EXPECT_EQ(port7[0], 500u);
  EXPECT_EQ(port7[1], 500u + 166u);  // floor(999 / 6)
  EXPECT_EQ(port7[2], 499u - 166u);  // floor(999 / 2) - floor(999 / 6)
  EXPECT_EQ(port7[3], 832u - 499u);  // floor(999 x 5 / 6) - floor(999 / 2)
  EXPECT_EQ(port7[4], 999u - 832u);
  EXPECT_EQ(port3, 7u);  // all of it, in the last bin
}

TEST(FabricSamples, DrainKeepsOpenBinsAndOrdersRowsByBinThenPort) {
  FabricSamples s = make();
  s.on_transmit(0, at(0.1), 10, kWire, 0);  // global 7
  s.on_transmit(1, at(0.2), 20, kWire, 0);  // global 3
  s.on_transmit(0, at(1.1), 30, kWire, 0);  // closes bin 0 of port 7
  s.on_enqueue(1, at(1.2), 64, true);
  s.on_transmit(1, at(1.25), 64, kWire, 0);
  s.on_drop(0, at(1.3));
  s.on_pause_sent(1, at(1.4));
  s.drain(at(1.5), false);  // bin 0 ends before 1.5 us, bin 1 does not
  EXPECT_EQ(s.bins_drained(), 1u);
  std::vector<SampleRow> rows = take(s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].port, 3u);
  EXPECT_EQ(rows[0].bytes, 20u);
  EXPECT_EQ(rows[1].port, 7u);
  EXPECT_EQ(rows[1].bytes, 10u);
  s.drain(at(1.9), false);  // still within bin 1: nothing
  EXPECT_TRUE(s.rows().empty());
  s.drain(at(3), false);
  rows = take(s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bin, 1u);
  EXPECT_EQ(rows[0].port, 3u);
  EXPECT_EQ(rows[0].ecn_marks, 1u);
  EXPECT_EQ(rows[0].pause_sent, 1u);
  EXPECT_EQ(rows[0].queue_max_bytes, 64u);
  EXPECT_EQ(rows[0].bytes, 64u);
  EXPECT_EQ(rows[1].port, 7u);
  EXPECT_EQ(rows[1].bytes, 30u);
  EXPECT_EQ(rows[1].drops, 1u);
}

TEST(FabricSamples, APauseOpenAtTheEndCountsUpToTheEndAndNoBinStartsThere) {
  FabricSamples s = make();
  s.on_backlog(0, at(0.5), 4000);
  s.on_paused(0, at(0.5), true);
  s.drain(at(3), true);  // stopped at 3 us, still paused with a queue
  const std::vector<SampleRow> rows = take(s);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.back().bin, 2u);
  std::int64_t paused = 0;
  for (const SampleRow& r : rows) {
    paused += r.paused_ps;
    EXPECT_EQ(r.queue_max_bytes, 4000u);
  }
  EXPECT_EQ(paused, (at(3) - at(0.5)).picoseconds());
}

TEST(FabricSamples, RowsDoNotDependOnWhenTheyAreDrained) {
  // The same port history drained at every bin boundary and only at the end.
  auto history = [](FabricSamples& s, const std::function<void(SimTime)>& window) {
    for (int i = 0; i < 40; ++i) {
      const double t = 0.37 * i;
      window(at(t));
      s.on_enqueue(static_cast<std::uint32_t>(i % 2), at(t), (i * 997) % 5000, i % 3 == 0);
      s.on_transmit(static_cast<std::uint32_t>(i % 2), at(t), 100 + i, kWire, (i * 991) % 3000);
      if (i % 7 == 0) s.on_paused(0, at(t), true);
      if (i % 7 == 3) s.on_paused(0, at(t), false);
    }
  };
  FabricSamples a = make();
  std::vector<SampleRow> ra;
  history(a, [&](SimTime t) {
    a.drain(t, false);
    for (const SampleRow& r : take(a)) ra.push_back(r);
  });
  a.drain(at(20), true);
  for (const SampleRow& r : take(a)) ra.push_back(r);
  FabricSamples b = make();
  history(b, [](SimTime) {});
  b.drain(at(20), true);
  const std::vector<SampleRow> rb = take(b);
  ASSERT_EQ(ra.size(), rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].bin, rb[i].bin);
    EXPECT_EQ(ra[i].port, rb[i].port);
    EXPECT_EQ(ra[i].bytes, rb[i].bytes);
    EXPECT_EQ(ra[i].queue_max_bytes, rb[i].queue_max_bytes);
    EXPECT_EQ(ra[i].paused_ps, rb[i].paused_ps);
    EXPECT_EQ(ra[i].ecn_marks, rb[i].ecn_marks);
  }
}

TEST(ParseSampleInterval, TimesOffAndBounds) {
  EXPECT_EQ(*parse_sample_interval("10us"), SimTime::us(10));
  EXPECT_EQ(*parse_sample_interval("off"), SimTime::zero());
  EXPECT_EQ(*parse_sample_interval("0"), SimTime::zero());
  EXPECT_FALSE(parse_sample_interval("5ns").ok());
  EXPECT_FALSE(parse_sample_interval("2s").ok());
  EXPECT_FALSE(parse_sample_interval("fast").ok());
}

}  // namespace
}  // namespace stepsim::fabric
