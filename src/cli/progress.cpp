#include "src/cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace stepsim::cli {
namespace {

bool g_bar_drawn = false;

bool on_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

// The width of the terminal stderr is on (80 if unknown).
int terminal_columns() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

// The interval between lines: "10 s", "0.05 s", "2 min 00 s".
std::string interval_text(double s) {
  if (s >= 1) return duration_text(s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// How far back the ETA's rate is taken: a minute, or six lines if they are further apart.
double eta_window(double interval_s) {
  return std::max(60.0, 6 * interval_s);
}

}  // namespace

// A simulated time as the summary prints it: "9.0008 s", "2.186 ms", "12.500 us".
std::string sim_text(double s) {
  char buf[48];
  if (s >= 1) {
    std::snprintf(buf, sizeof buf, "%.4f s", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  }
  return buf;
}

double progress_interval() {
  return on_terminal() ? 0.5 : 10.0;
}

void print_progress(const pdes::Progress& p) {
  const double rate = p.wall_s > 0 ? static_cast<double>(p.events) / p.wall_s : 0.0;
  double frac = -1;
  std::string eta = "unknown";
  if (!p.end.is_never() && p.end > SimTime::zero()) {
    frac = std::min(1.0, p.now.seconds() / p.end.seconds());
    if (frac > 0) eta = duration_text(p.wall_s * (1 - frac) / frac);
  }
  char pct[32] = "";
  if (frac >= 0) std::snprintf(pct, sizeof pct, "%.1f%%", frac * 100);
  if (on_terminal()) {
    constexpr int kWidth = 30;
    const int filled = frac >= 0 ? static_cast<int>(frac * kWidth) : 0;
    std::fprintf(stderr, "\r[%.*s%*s] %6s  sim %s  %.2f Mev/s  ETA %s\x1b[K", filled,
                 "##############################", kWidth - filled, "", pct,
                 to_string(p.now).c_str(), rate / 1e6, eta.c_str());
    g_bar_drawn = true;
  } else {
    std::fprintf(stderr, "progress: sim %s of %s%s%s%s, %.3g events, %.2f Mev/s, wall %s, ETA %s\n",
                 to_string(p.now).c_str(), to_string(p.end).c_str(), frac >= 0 ? " (" : "", pct,
                 frac >= 0 ? ")" : "", static_cast<double>(p.events), rate / 1e6,
                 duration_text(p.wall_s).c_str(), eta.c_str());
  }
  std::fflush(stderr);
}

void finish_progress() {
  if (g_bar_drawn) {
    std::fprintf(stderr, "\n");
    g_bar_drawn = false;
  }
}

StepProgress::StepProgress(Options o)
    : o_(std::move(o)), eta_(o_.expected_s, eta_window(o_.interval_s)) {
  if (!o_.show) return;
  char took[64] = "";
  if (o_.expected_wall_s >= 0) {
    std::snprintf(took, sizeof took, ", computed in %.3g %s",
                  o_.expected_wall_s < 1 ? o_.expected_wall_s * 1e3 : o_.expected_wall_s,
                  o_.expected_wall_s < 1 ? "ms" : "s");
  }
  std::string counts = "simulated time";
  if (o_.work) {
    char w[256];
    std::snprintf(w, sizeof w,
                  "the network bytes the step moves at ideal fidelity (%.4g GB across servers, "
                  "each collective's over its ideal time, or the bytes delivered so far if more; "
                  "%.0f%% for simulated time itself)",
                  o_.work->network_bytes() / 1e9, WorkCurve::kTimeShare * 100);
    counts = w;
  }
  const std::string every = o_.interval_s > 0
                                ? "a line every " + interval_text(o_.interval_s) + " (--progress)"
                                : "a line per report (--progress 0)";
  if (o_.expected_s > 0) {
    std::fprintf(o_.out,
                 "progress: the ETA counts %s against an estimate of the step, its "
                 "time at ideal fidelity: %s%s (a packet or cell step may take longer or "
                 "shorter); %s\n",
                 counts.c_str(), sim_text(o_.expected_s).c_str(), took, every.c_str());
  } else {
    std::fprintf(o_.out, "progress: no estimate of the step (no ETA): %s\n", every.c_str());
  }
  std::fflush(o_.out);
  if (o_.watchdog && o_.interval_s > 0) watchdog_ = std::thread([this] { watch(); });
}

StepProgress::~StepProgress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

double StepProgress::elapsed_s() const {
  if (o_.clock) return o_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

std::function<bool(double)> StepProgress::on_pass() {
  return [this](double sim_s) {
    if (o_.show) {
      const double wall = elapsed_s();
      std::lock_guard<std::mutex> lock(mu_);
      ++passes_done_;
      in_collective_ = false;
      observe_locked(wall, sim_s);
      report_locked(wall);
    }
    // Between collectives an ideal run may stop at once; a packet run stops inside the engine,
    // where every rank agrees on it.
    return !(o_.stop_between_passes && pdes::Engine::stop_requested());
  };
}

std::function<void(const pdes::Progress&)> StepProgress::on_step_engine() {
  return [this](const pdes::Progress& p) {
    if (!o_.show) return;
    const double wall = elapsed_s();
    std::lock_guard<std::mutex> lock(mu_);
    if (step_engine_ && p.events >= step_events_ && p.wall_s > step_wall_) {  // the same run
      step_rate_ = static_cast<double>(p.events - step_events_) / (p.wall_s - step_wall_);
    } else {
      step_rate_ = p.wall_s > 0 ? static_cast<double>(p.events) / p.wall_s : -1;
    }
    step_engine_ = true;
    in_collective_ = false;
    step_events_ = p.events;
    step_wall_ = p.wall_s;
    observe_locked(wall, p.now.seconds(), p.work);
    report_locked(wall);
  };
}

std::function<void(const pdes::Progress&)> StepProgress::on_collective_engine() {
  return [this](const pdes::Progress& p) {
    if (!o_.show) return;
    const double wall = elapsed_s();
    std::lock_guard<std::mutex> lock(mu_);
    // Each collective's run counts its events and wall time from its own start, and where one
    // run ends and the next starts is not seen here: the rate is the current run's average.
    coll_rate_ = p.wall_s > 0 ? static_cast<double>(p.events) / p.wall_s : -1;
    in_collective_ = true;
    coll_sim_s_ = p.now.seconds();
    coll_events_ = p.events;
    report_locked(wall);
  };
}

void StepProgress::observe_locked(double wall_s, double sim_s, std::uint64_t delivered) {
  sim_ = std::max(sim_, sim_s);
  delivered_ = std::max(delivered_, delivered);
  eta_.observe(
      wall_s,
      o_.work ? o_.work->fraction(sim_, static_cast<double>(delivered_)) * o_.expected_s : sim_s);
}

void StepProgress::attach(pdes::EngineOptions& opts, bool whole_step) {
  if (!o_.show) return;
  opts.on_progress = whole_step ? on_step_engine() : on_collective_engine();
  // More often than lines are printed (a fresher rate), never so often that it costs.
  opts.progress_every = o_.interval_s > 0 ? std::clamp(o_.interval_s, 0.05, 2.0) : 0.05;
}

std::string StepProgress::line(double wall_s, bool terminal) const {
  std::string s;
  char buf[160];
  const EtaEstimator::Eta e = eta_.eta(wall_s);
  if (sim_ > 0 && o_.work) {
    std::snprintf(buf, sizeof buf, "sim %s of the estimate %s, %.1f%% of the work",
                  sim_text(sim_).c_str(), sim_text(o_.expected_s).c_str(), e.fraction * 100);
    s += buf;
  } else if (sim_ > 0 && o_.expected_s > 0) {
    std::snprintf(buf, sizeof buf, "sim %s, %.1f%% of the estimate %s", sim_text(sim_).c_str(),
                  e.fraction * 100, sim_text(o_.expected_s).c_str());
    s += buf;
  } else if (sim_ > 0) {
    s += "sim " + sim_text(sim_);
  } else {
    s += "no simulated time yet (setting up or in the first collective)";
  }
  if (o_.passes > 0 && passes_done_ > 0) {
    std::snprintf(buf, sizeof buf, "; passes %llu/%llu",
                  static_cast<unsigned long long>(std::min(passes_done_, o_.passes)),
                  static_cast<unsigned long long>(o_.passes));
    s += buf;
    if (passes_done_ >= o_.passes && !step_engine_) s += " (gradient reduction, optimizer left)";
  }
  if (step_engine_) {
    std::snprintf(buf, sizeof buf, "; %.4g events", static_cast<double>(step_events_));
    s += buf;
    if (step_rate_ >= 0) {
      std::snprintf(buf, sizeof buf, ", %.2f Mev/s", step_rate_ / 1e6);
      s += buf;
    }
  }
  if (in_collective_) {
    s += "; in a collective: sim " + sim_text(coll_sim_s_);
    std::snprintf(buf, sizeof buf, ", %.4g events", static_cast<double>(coll_events_));
    s += buf;
    if (coll_rate_ >= 0) {
      std::snprintf(buf, sizeof buf, ", %.2f Mev/s", coll_rate_ / 1e6);
      s += buf;
    }
  }
  s += "; wall " + duration_text(wall_s);
  if (!(o_.expected_s > 0)) return s;  // no estimate, no ETA
  return terminal ? "ETA " + eta_text(e, true) + "; " + s : s + "; ETA " + eta_text(e, false);
}

std::string StepProgress::eta_text(const EtaEstimator::Eta& e, bool brief) const {
  switch (e.state) {
    case EtaEstimator::State::kCounting:
      return duration_text(e.eta_s);
    case EtaEstimator::State::kNoProgress:
      return brief ? "unknown" : "unknown (no simulated progress yet)";
    case EtaEstimator::State::kStalled:
      return "unknown (no simulated progress for " + duration_text(e.stall_s) + ")";
    case EtaEstimator::State::kPastEstimate:
      break;
  }
  if (brief) return "unknown (past the estimate)";
  std::string s = "unknown (past the estimate: the step is slower than at ideal fidelity";
  if (e.rate > 0) {
    s += "; 10% more of it takes " + duration_text(0.1 * o_.expected_s / e.rate) +
         " at the recent rate";
  }
  return s + ")";
}

void StepProgress::report_locked(double wall_s) {
  if (stopping_) return;
  if (wall_s - last_print_ >= o_.interval_s) print_locked(wall_s);
}

void StepProgress::print_locked(double wall_s) {
  last_print_ = wall_s;
  printed_ = true;
  if (o_.tty) {
    constexpr int kWidth = 20;
    const double f = std::clamp(eta_.eta(wall_s).fraction, 0.0, 1.0);
    const int filled = static_cast<int>(f * kWidth);
    // One terminal row, or the carriage return cannot redraw it.
    std::string text = line(wall_s, true);
    const std::size_t room =
        static_cast<std::size_t>(std::max(20, terminal_columns() - kWidth - 4));
    if (text.size() > room) text.resize(room);
    std::fprintf(o_.out, "\r[%.*s%*s] %s\x1b[K", filled, "####################", kWidth - filled,
                 "", text.c_str());
  } else {
    std::fprintf(o_.out, "progress: %s\n", line(wall_s, false).c_str());
  }
  std::fflush(o_.out);
}

void StepProgress::note(const std::string& text) {
  if (!o_.show) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (o_.tty && printed_) std::fprintf(o_.out, "\n");
  std::fprintf(o_.out, "progress: %s\n", text.c_str());
  std::fflush(o_.out);
  if (o_.tty && printed_) print_locked(elapsed_s());
}

void StepProgress::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Wake when the next line is due; print only if no report printed one meanwhile.
    const double due = last_print_ + o_.interval_s - elapsed_s();
    if (due > 0) {
      cv_.wait_for(lock, std::chrono::duration<double>(due));
      continue;
    }
    print_locked(elapsed_s());
  }
}

void StepProgress::finish(double step_s, const char* status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (!o_.show) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (o_.tty && printed_) std::fprintf(o_.out, "\n");
  std::string s = std::string("progress: ") + status + ": sim " + sim_text(step_s);
  char buf[96];
  if (o_.expected_s > 0) {
    std::snprintf(buf, sizeof buf, ", %.3f x the estimate %s", step_s / o_.expected_s,
                  sim_text(o_.expected_s).c_str());
    s += buf;
  }
  if (step_engine_) {
    std::snprintf(buf, sizeof buf, "; %.4g events", static_cast<double>(step_events_));
    s += buf;
  }
  s += "; wall " + duration_text(elapsed_s());
  std::fprintf(o_.out, "%s\n", s.c_str());
  if (o_.work && std::getenv("STEPSIM_PROGRESS_DEBUG") != nullptr) {
    // Checks that the delivered bytes count what the work curve counts (issue 14).
    std::fprintf(o_.out,
                 "progress debug: delivered %.6g B at the last engine report (sim %s); the work "
                 "curve: W %.6g B, W(sim) %.6g B\n",
                 static_cast<double>(delivered_), sim_text(sim_).c_str(), o_.work->network_bytes(),
                 (o_.work->fraction(sim_) - WorkCurve::kTimeShare * sim_ / o_.work->end_s()) /
                     (1 - WorkCurve::kTimeShare) * o_.work->network_bytes());
  }
  std::fflush(o_.out);
}

}  // namespace stepsim::cli
