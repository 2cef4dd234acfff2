#include "src/cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace stepsim::cli {
namespace {

bool g_bar_drawn = false;

bool on_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

}  // namespace

double progress_interval() {
  return on_terminal() ? 0.5 : 10.0;
}

void print_progress(const pdes::Progress& p) {
  const double rate = p.wall_s > 0 ? static_cast<double>(p.events) / p.wall_s : 0.0;
  double frac = -1;
  double eta = -1;
  if (!p.end.is_never() && p.end > SimTime::zero()) {
    frac = std::min(1.0, p.now.seconds() / p.end.seconds());
    if (frac > 0) eta = p.wall_s * (1 - frac) / frac;
  }
  if (on_terminal()) {
    constexpr int kWidth = 30;
    const int filled = frac >= 0 ? static_cast<int>(frac * kWidth) : 0;
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  sim %s  %.2f Mev/s  ETA %.0f s   ", filled,
                 "##############################", kWidth - filled, "", frac * 100,
                 to_string(p.now).c_str(), rate / 1e6, eta);
    g_bar_drawn = true;
  } else {
    std::fprintf(
        stderr,
        "progress: sim %s of %s (%.1f%%), %.3g events, %.2f Mev/s, wall %.0f s, ETA %.0f s\n",
        to_string(p.now).c_str(), to_string(p.end).c_str(), frac * 100,
        static_cast<double>(p.events), rate / 1e6, p.wall_s, eta);
  }
  std::fflush(stderr);
}

void print_step_progress(std::uint64_t done, std::uint64_t total, double sim_s, double wall_s) {
  const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  const double eta = frac > 0 ? wall_s * (1 - frac) / frac : -1;
  if (on_terminal()) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  ops %llu/%llu  sim %.4g s  ETA %.0f s   ", filled,
                 "##############################", kWidth - filled, "", frac * 100,
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 sim_s, eta);
    g_bar_drawn = true;
  } else {
    std::fprintf(stderr,
                 "progress: %llu of %llu pipeline ops (%.1f%%), sim %.4g s, wall %.0f s, ETA %.0f "
                 "s\n",
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 frac * 100, sim_s, wall_s, eta);
  }
  std::fflush(stderr);
}

void finish_progress() {
  if (g_bar_drawn) {
    std::fprintf(stderr, "\n");
    g_bar_drawn = false;
  }
}

}  // namespace stepsim::cli
