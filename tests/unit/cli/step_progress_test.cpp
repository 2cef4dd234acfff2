#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/progress.hpp"

namespace stepsim::cli {
namespace {

// A StepProgress printing into a temporary file on a fake clock; lines() reads what it printed.
struct Fixture {
  double now = 0;
  std::FILE* file = std::tmpfile();
  StepProgress::Options options(double expected_s, double interval_s) {
    StepProgress::Options o;
    o.expected_s = expected_s;
    o.interval_s = interval_s;
    o.passes = 100;
    o.watchdog = false;
    o.out = file;
    o.clock = [this] { return now; };
    return o;
  }
  // A 10 s step whose work is a 1 GB network collective in its last second (WorkCurve), a line
  // every 10 s.
  StepProgress::Options whole_step_options() {
    StepProgress::Options o = options(10.0, 10);
    auto work = std::make_shared<WorkCurve>();
    work->add({9.0, 10.0, 1e9});
    work->finish(10.0);
    o.work = work;
    return o;
  }
  std::vector<std::string> lines() const {
    std::fflush(file);
    std::rewind(file);
    std::vector<std::string> out;
    std::string cur;
    for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) {
      if (c == '\n') {
        out.push_back(cur);
        cur.clear();
      } else {
        cur += static_cast<char>(c);
      }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
  }
  ~Fixture() { std::fclose(file); }
};

int count_prefix(const std::vector<std::string>& lines, const std::string& prefix) {
  int n = 0;
  for (const std::string& l : lines) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// In a log: one line per interval of (fake) wall time however often reports come, with the
// estimate, the fraction, the passes and an ETA; never "ETA 0 s" or "ETA <1 s" while the run is
// far from its end; past the estimate the ETA is unknown; finish() prints the last line.
TEST(StepProgress, LogLinesAtTheIntervalWithAnHonestEta) {
  Fixture fx;
  {
    StepProgress p(fx.options(/*expected_s=*/1.0, /*interval_s=*/10));
    auto pass = p.on_pass();
    for (int i = 1; i <= 100; ++i) {  // one pass a second; 0.012 simulated s each: 1.2 s
      fx.now = i;
      EXPECT_TRUE(pass(0.012 * i));
    }
    p.finish(1.2, "done");
  }
  const std::vector<std::string> lines = fx.lines();
  ASSERT_GE(lines.size(), 3U);
  EXPECT_NE(lines.front().find("estimate of the step, its time at ideal fidelity: 1.0000 s"),
            std::string::npos)
      << lines.front();
  EXPECT_EQ(count_prefix(lines, "progress: sim "), 10);  // at 10, 20, ..., 100 s
  int counting = 0;
  int past = 0;
  for (const std::string& l : lines) {
    if (l.rfind("progress: sim ", 0) != 0) continue;
    EXPECT_NE(l.find("% of the estimate 1.0000 s"), std::string::npos) << l;
    EXPECT_NE(l.find("passes "), std::string::npos) << l;
    EXPECT_EQ(l.find("ETA 0 s"), std::string::npos) << l;
    EXPECT_EQ(l.find("ETA <1 s"), std::string::npos) << l;
    counting += l.find("; ETA ") != std::string::npos && l.find("unknown") == std::string::npos;
    past += l.find("ETA unknown (past the estimate") != std::string::npos;
  }
  EXPECT_EQ(counting, 8);  // 10..80 s: below 1 s of simulated time
  EXPECT_EQ(past, 2);      // 90 and 100 s: 1.08 and 1.2 s
  EXPECT_EQ(lines.back().rfind("progress: done: sim 1.2000 s, 1.200 x the estimate 1.0000 s", 0),
            0U)
      << lines.back();
}

// Without an estimate (analytical fidelity runs without the ideal pass): the first line says
// so, the lines give the simulated time and passes but no share of an estimate and no ETA, and
// the last line no ratio.
TEST(StepProgress, WithoutAnEstimateNoShareAndNoEta) {
  Fixture fx;
  {
    StepProgress p(fx.options(/*expected_s=*/0, /*interval_s=*/10));
    auto pass = p.on_pass();
    for (int i = 1; i <= 30; ++i) {
      fx.now = i;
      EXPECT_TRUE(pass(0.1 * i));
    }
    p.finish(3.0, "done");
  }
  const std::vector<std::string> lines = fx.lines();
  ASSERT_GE(lines.size(), 3U);
  EXPECT_EQ(lines.front().rfind("progress: no estimate of the step (no ETA): a line every", 0), 0U)
      << lines.front();
  EXPECT_EQ(count_prefix(lines, "progress: sim "), 3);
  for (const std::string& l : lines) {
    EXPECT_EQ(l.find("estimate 0"), std::string::npos) << l;
    if (l.rfind("progress: sim ", 0) == 0) {
      EXPECT_EQ(l.find("ETA"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(lines.back().rfind("progress: done: sim 3.0000 s; wall ", 0), 0U) << lines.back();
}

// Engine reports of a whole-step run: the step's simulated time, events and events/s (between
// the last two reports, whatever single-collective runs reported meanwhile).
TEST(StepProgress, WholeStepEngineReports) {
  Fixture fx;
  {
    StepProgress p(fx.options(2.0, 10));
    pdes::EngineOptions opts;
    p.attach(opts, /*whole_step=*/true);
    ASSERT_TRUE(static_cast<bool>(opts.on_progress));
    EXPECT_GT(opts.progress_every, 0);
    // The comm model's own runs (collectives folded into the whole step) report in between.
    pdes::EngineOptions folded;
    p.attach(folded, /*whole_step=*/false);
    for (int i = 1; i <= 30; ++i) {
      fx.now = i;
      opts.on_progress(pdes::Progress{SimTime::ms(50 * i), SimTime::never(),
                                      static_cast<std::uint64_t>(i) * 1000000, double(i)});
      if (i % 7 == 0) folded.on_progress(pdes::Progress{SimTime::us(3), SimTime::never(), 5, 0.5});
    }
    p.finish(1.5, "done");
  }
  const std::vector<std::string> lines = fx.lines();
  ASSERT_EQ(count_prefix(lines, "progress: sim "), 3);
  const std::string& l = lines[3];  // at 30 s: 1.5 s of 2 s, 0.05 s per s: 10 s left
  EXPECT_EQ(l.rfind("progress: sim 1.5000 s, 75.0% of the estimate 2.0000 s", 0), 0U) << l;
  EXPECT_NE(l.find("3e+07 events, 1.00 Mev/s"), std::string::npos) << l;
  EXPECT_NE(l.find("wall 30 s; ETA 10 s"), std::string::npos) << l;
  EXPECT_EQ(l.find("in a collective"), std::string::npos) << l;
  EXPECT_EQ(l.find("passes"), std::string::npos) << l;
}

// Engine reports of single collectives (memoized packet runs) keep the log alive without moving
// the step's simulated time.
TEST(StepProgress, CollectiveRunsAreAHeartbeat) {
  Fixture fx;
  {
    StepProgress p(fx.options(1.0, 10));
    pdes::EngineOptions opts;
    p.attach(opts, /*whole_step=*/false);
    auto pass = p.on_pass();
    fx.now = 1;
    pass(0.5);
    fx.now = 11;
    opts.on_progress(pdes::Progress{SimTime::us(20), SimTime::never(), 5000000, 10.0});
    p.finish(1.0, "done");
  }
  const std::vector<std::string> lines = fx.lines();
  ASSERT_EQ(count_prefix(lines, "progress: sim "), 1);
  EXPECT_NE(lines[1].find("sim 500.000 ms, 50.0% of the estimate"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("in a collective: sim 20.000 us, 5e+06 events, 0.50 Mev/s"),
            std::string::npos)
      << lines[1];
}

// Not rank 0, or --quiet: nothing at all, and no engine callback.
TEST(StepProgress, HiddenPrintsNothing) {
  Fixture fx;
  {
    StepProgress::Options o = fx.options(1.0, 0);
    o.show = false;
    StepProgress p(o);
    pdes::EngineOptions opts;
    p.attach(opts, true);
    EXPECT_FALSE(static_cast<bool>(opts.on_progress));
    auto pass = p.on_pass();
    fx.now = 5;
    EXPECT_TRUE(pass(0.5));
    p.finish(1.0, "done");
  }
  EXPECT_TRUE(fx.lines().empty());
}

// The watchdog prints the last state when no report comes (here: none at all), at the interval.
TEST(StepProgress, WatchdogPrintsWithoutReports) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("stepsim_watchdog_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       ".txt");
  auto read = [&path] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  {
    StepProgress::Options o;
    o.expected_s = 1;
    o.interval_s = 0.05;
    o.out = file;
    StepProgress p(o);
    // Wait (bounded, generously) until it printed a line; no assertion on how long that took.
    for (int i = 0; i < 6000 && read().find("progress: no simulated") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    p.finish(0, "stopped");
  }
  std::fclose(file);
  const std::string text = read();
  std::filesystem::remove(path);
  EXPECT_NE(text.find("a line every 0.05 s"), std::string::npos) << text;
  EXPECT_NE(text.find("progress: no simulated time yet"), std::string::npos) << text;
  EXPECT_NE(text.find("ETA unknown (no simulated progress yet)"), std::string::npos) << text;
  EXPECT_NE(text.find("progress: stopped: sim"), std::string::npos) << text;
}

// A whole step whose work is a network collective at its end (WorkCurve): 90% of simulated time
// done in 10 s of wall time is 4.5% of the work, so the ETA is minutes, not the second that
// simulated time alone would promise; the first line says what it counts.
TEST(StepProgress, WholeStepCountsTheWork) {
  Fixture fx;
  {
    StepProgress p(fx.whole_step_options());
    pdes::EngineOptions opts;
    p.attach(opts, /*whole_step=*/true);
    for (int i = 1; i <= 10; ++i) {
      fx.now = i;
      opts.on_progress(pdes::Progress{SimTime::ms(900 * i), SimTime::never(),
                                      static_cast<std::uint64_t>(i) * 1000, double(i)});
    }
    p.finish(9.0, "stopped");
  }
  const std::vector<std::string> lines = fx.lines();
  ASSERT_GE(lines.size(), 2U);
  EXPECT_NE(lines.front().find("counts the network bytes the step moves at ideal fidelity (1 GB"),
            std::string::npos)
      << lines.front();
  ASSERT_EQ(count_prefix(lines, "progress: sim "), 1);
  const std::string& l = lines[1];
  EXPECT_EQ(l.rfind("progress: sim 9.0000 s of the estimate 10.0000 s, 4.5% of the work", 0), 0U)
      << l;
  // (10 - 0.45) / (0.45 / 10) s: 212 s.
  EXPECT_NE(l.find("; ETA 3 min 32 s"), std::string::npos) << l;
}

// The whole step's engine reports the network bytes delivered (Progress::work): when simulated
// time stalls in the data-parallel reduction short of where the ideal run had it, the delivered
// bytes carry the percentage and the ETA stays minutes (not hours); the fraction never goes back
// when a later report carries fewer bytes.
TEST(StepProgress, WholeStepFollowsTheDeliveredBytes) {
  Fixture fx;
  {
    StepProgress p(fx.whole_step_options());
    pdes::EngineOptions opts;
    p.attach(opts, /*whole_step=*/true);
    // Simulated time stuck at 8.99 s (the curve: 4.5%); 2% of the bytes per 10 s of wall time.
    for (int i = 1; i <= 12; ++i) {
      fx.now = 10.0 * i;
      opts.on_progress(pdes::Progress{SimTime::ms(8990), SimTime::never(),
                                      static_cast<std::uint64_t>(i) * 1000, 10.0 * i,
                                      static_cast<std::uint64_t>(i) * 20000000});
    }
    // A report with fewer bytes (cannot happen, but must not move the fraction back).
    fx.now = 130;
    opts.on_progress(pdes::Progress{SimTime::ms(8990), SimTime::never(), 13000, 130.0, 0});
    p.finish(8.99, "stopped");
  }
  const std::vector<std::string> lines = fx.lines();
  std::vector<std::string> sim;
  for (const std::string& l : lines) {
    if (l.rfind("progress: sim ", 0) == 0) sim.push_back(l);
  }
  ASSERT_EQ(sim.size(), 13U);
  // 12 x 2% = 24% of the bytes: 0.95 x 0.24 + 0.05 x 0.899 = 27.3%, not the curve's 4.5%.
  EXPECT_NE(sim[11].find("27.3% of the work"), std::string::npos) << sim[11];
  EXPECT_NE(sim[12].find("27.3% of the work"), std::string::npos) << sim[12];
  // The rate: 1.9% of the work per 10 s; 72.7% left: about 6 minutes.
  const std::size_t at = sim[11].find("; ETA ");
  ASSERT_NE(at, std::string::npos) << sim[11];
  EXPECT_NE(sim[11].find(" min ", at), std::string::npos) << sim[11];
  EXPECT_EQ(sim[11].find(" h", at), std::string::npos) << sim[11];
}

}  // namespace
}  // namespace stepsim::cli
