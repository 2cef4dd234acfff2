#pragma once
// Progress of a long run on rank 0: a bar on a terminal, a line every few seconds in a log.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "src/cli/eta_estimator.hpp"
#include "src/cli/work_curve.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::cli {

/// A simulated time as `run`'s summary prints it: "9.0008 s", "2.186 ms", "12.500 us".
std::string sim_text(double s);

/// Seconds between progress updates: 0.5 on a terminal, 10 in a batch log.
double progress_interval();
/// Prints one update to stderr (the bench commands' engine runs).
void print_progress(const pdes::Progress& p);
/// Ends a terminal progress bar (newline), if one was drawn.
void finish_progress();

/// The progress of `stepsim run`'s step, printed on rank 0. Its denominator is an estimate of the
/// step's simulated time (the step at ideal fidelity, which takes milliseconds to run); the
/// reports it takes are simulated times: the memoized executor's passes (on_pass), or the
/// engine's Progress of a run that covers the whole step (on_step_engine); per-collective engine
/// runs of the memoized executor only keep it alive (on_collective_engine: events/s, no step
/// time). Each line: simulated time, its fraction of the estimate, pipeline passes, events and
/// events/s, wall time and the ETA of EtaEstimator (recent rate; "unknown" once past the
/// estimate, never 0 s before the end). On a terminal the line is updated in place; in a log
/// (stderr not a terminal) a full line every `interval_s` of wall time, no more often. A thread
/// prints the last state when no report came for an interval (setting up, a long collective), so
/// a log is never silent longer than that. With a `work` curve (the whole step at packet or cell
/// fidelity) the percentage and the ETA count the step's work instead of simulated time:
/// WorkCurve::fraction of the simulated time and of the network bytes the engine reports
/// delivered (Progress::work), whichever is further; the estimator sees fraction x estimate.
/// Thread-safe: the callbacks may run on an engine thread.
class StepProgress {
 public:
  struct Options {
    double expected_s = 0;        ///< the estimate: the step's simulated time at ideal fidelity
    double expected_wall_s = -1;  ///< the wall time that took (< 0: not shown)
    double interval_s = 10;       ///< wall seconds between lines; 0 prints on every report
    std::uint64_t passes = 0;     ///< pipeline passes in the step (0: not shown)
    bool show = true;             ///< print at all (rank 0, no --quiet)
    bool stop_between_passes = false;  ///< on_pass stops the step after SIGINT/SIGTERM
    bool watchdog = true;              ///< the thread that prints when no report comes
    std::FILE* out = stderr;
    bool tty = false;               ///< update one line in place (a terminal)
    std::function<double()> clock;  ///< wall seconds since the start; default: steady clock
    /// The step's work against simulated time (finished); null: simulated time is the work.
    std::shared_ptr<const WorkCurve> work;
  };

  explicit StepProgress(Options o);
  ~StepProgress();
  StepProgress(const StepProgress&) = delete;
  StepProgress& operator=(const StepProgress&) = delete;

  /// The memoized executor's per-pass callback (workload::run_step's `progress`): the pass's
  /// simulated end time in seconds; its answer says whether to go on.
  std::function<bool(double)> on_pass();
  /// For an engine run that covers the whole step from simulated time 0: Progress::now is the
  /// step's simulated time, Progress::events all of the step's events so far.
  std::function<void(const pdes::Progress&)> on_step_engine();
  /// For the engine runs of single collectives (memoized packet and cell fidelity): their own
  /// clocks, shown as a heartbeat with events/s; the step's simulated time comes from on_pass.
  std::function<void(const pdes::Progress&)> on_collective_engine();
  /// Sets `opts.on_progress` (on_step_engine if `whole_step`, else on_collective_engine) and
  /// `opts.progress_every`, when this prints at all.
  void attach(pdes::EngineOptions& opts, bool whole_step);

  /// Stops the updates and prints the last line: the step's simulated time `step_s` against the
  /// estimate, events and wall time; `status` is "done", "stopped" or "incomplete".
  void finish(double step_s, const char* status);
  /// Wall seconds since the start.
  [[nodiscard]] double elapsed_s() const;
  /// Prints "progress: `text`" on a line of its own (when this prints at all).
  void note(const std::string& text);

  /// One progress line at wall time `wall_s` (without "progress: " or the terminal's bar); on a
  /// `terminal`, the ETA first, as the line is cut to the terminal's width.
  [[nodiscard]] std::string line(double wall_s, bool terminal = false) const;

 private:
  [[nodiscard]] std::string eta_text(const EtaEstimator::Eta& e, bool brief) const;
  void report_locked(double wall_s);  // prints if an interval has passed (mutex held)
  void print_locked(double wall_s);
  void watch();
  // The estimator sees the work done by sim_s (with `delivered` network bytes, Progress::work).
  void observe_locked(double wall_s, double sim_s, std::uint64_t delivered = 0);

  Options o_;
  EtaEstimator eta_;
  double sim_ = 0;               // the furthest simulated time reported
  std::uint64_t delivered_ = 0;  // the most network bytes the whole step's engine reported
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  double last_print_ = 0;
  bool printed_ = false;  // a line (or the bar) since the start line
  std::uint64_t passes_done_ = 0;
  // The whole step's engine run.
  bool step_engine_ = false;  // it reported
  std::uint64_t step_events_ = 0;
  double step_wall_ = 0;   // its Progress::wall_s at the last report
  double step_rate_ = -1;  // events per wall second between its last two reports
  // The engine runs of single collectives (the memoized mode's, or the whole step's folded ones).
  bool in_collective_ = false;  // one reported since the last pass or whole-step report
  double coll_sim_s_ = 0;
  std::uint64_t coll_events_ = 0;
  double coll_rate_ = -1;  // events per wall second since that run started
  std::thread watchdog_;
};

}  // namespace stepsim::cli
