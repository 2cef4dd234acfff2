#include "src/cli/phase_profile.hpp"

#include <cinttypes>
#include <cstdlib>
#include <ctime>
#include <utility>

namespace stepsim::cli {

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool profile_requested_by_environment() {
  const char* v = std::getenv("STEPSIM_PROFILE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

PhaseProfile::PhaseProfile(bool enabled)
    : enabled_(enabled), start_wall_(Clock::now()), start_cpu_(process_cpu_s()) {}

void PhaseProfile::phase(std::string name, std::string what) {
  if (!enabled_) return;
  stop();
  current_ = phases_.size();
  for (std::size_t i = 0; i < phases_.size(); ++i) {
    if (phases_[i].name == name) current_ = i;  // a phase resumed adds to its times
  }
  if (current_ == phases_.size()) phases_.push_back(Phase{std::move(name), std::move(what), 0, 0});
  open_ = true;
  phase_wall_ = Clock::now();
  phase_cpu_ = process_cpu_s();
}

void PhaseProfile::stop() {
  if (!open_) return;
  open_ = false;
  Phase& p = phases_[current_];
  p.wall_s += std::chrono::duration<double>(Clock::now() - phase_wall_).count();
  p.cpu_s += process_cpu_s() - phase_cpu_;
}

void PhaseProfile::engine_detail(const std::string& phase, const nic::EngineTally& engine) {
  if (!enabled_) return;
  for (Phase& p : phases_) {
    if (p.name != phase) continue;
    const double other = p.wall_s - engine.compute_s - engine.sync_s;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "%" PRIu64 " events in %" PRIu64
                  " windows: processing windows %.3f s, synchronisation %.3f s (exchange and "
                  "global minimum, with the wait for other ranks), the rest %.3f s (building the "
                  "models, partitioning, the step's own work)",
                  engine.events, engine.windows, engine.compute_s, engine.sync_s, other);
    p.what = buf;
  }
}

void PhaseProfile::print(std::FILE* out) {
  if (!enabled_) return;
  stop();
  const double wall = std::chrono::duration<double>(Clock::now() - start_wall_).count();
  const double cpu = process_cpu_s() - start_cpu_;
  std::fprintf(out, "# profile (rank 0; wall and CPU of this process, all threads)\n");
  for (const Phase& p : phases_) {
    std::fprintf(out, "profile %-15s wall %9.3f s  cpu %9.3f s  %s\n", p.name.c_str(), p.wall_s,
                 p.cpu_s, p.what.c_str());
  }
  std::fprintf(
      out,
      "profile %-15s wall %9.3f s  cpu %9.3f s  since `run` began (MPI start-up not counted)\n",
      "total", wall, cpu);
  std::fflush(out);
}

}  // namespace stepsim::cli
