#pragma once
// Where a run's time goes, per phase (STEPSIM_PROFILE=1 or --profile): set-up, the ideal pass
// that plans the step and estimates it, the engine runs, output writing; each phase's wall and
// CPU time (this process, every thread), printed once by rank 0 to stderr after the summary.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "stepsim/nic/rdma_run.hpp"

namespace stepsim::cli {

/// This process's CPU time (every thread), seconds.
double process_cpu_s();

/// True when the environment asks for the profile (STEPSIM_PROFILE set, not empty, not 0).
bool profile_requested_by_environment();

class PhaseProfile {
 public:
  /// Starts the clock (the start of the run's total).
  explicit PhaseProfile(bool enabled);
  [[nodiscard]] bool enabled() const { return enabled_; }
  /// Ends the current phase, if any, and starts `name` (`what` says what it covers), or resumes
  /// it if it ran before.
  void phase(std::string name, std::string what);
  /// Ends the current phase.
  void stop();
  /// The engine's share of the phase named `phase`: its committed events and windows, time
  /// processing windows and waiting on synchronisation (rank 0's, summed over engine runs).
  void engine_detail(const std::string& phase, const nic::EngineTally& engine);
  /// The table, on `out`: one line per phase, then the total since construction. Ends the
  /// current phase.
  void print(std::FILE* out);

  struct Phase {
    std::string name;
    std::string what;
    double wall_s = 0;
    double cpu_s = 0;
  };
  [[nodiscard]] const std::vector<Phase>& phases() const { return phases_; }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  Clock::time_point start_wall_;
  double start_cpu_;
  bool open_ = false;
  std::size_t current_ = 0;
  Clock::time_point phase_wall_;
  double phase_cpu_ = 0;
  std::vector<Phase> phases_;
};

}  // namespace stepsim::cli
