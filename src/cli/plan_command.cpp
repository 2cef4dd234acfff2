#include "src/cli/plan_command.hpp"
#include "src/cli/data_dir.hpp"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/plan_report.hpp"
#include "src/cli/plan_scoring.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "src/plan/layout_space.hpp"
#include "src/plan/plan_search.hpp"
#include "stepsim/output/text_file.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {

PlanCommand::PlanCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "plan",
      "Search the layouts of a scenario's model on its cluster: which fit in memory, which run "
      "fastest (analytical fidelity), the best confirmed at a finer fidelity");
  cmd_->add_option("scenario", opt_.scenario, "Scenario file (workloads/*.yaml)")->required();
  cmd_->add_option("--set", opt_.sets,
                   "Override a scenario key before the search: key=value (repeatable)");
  cmd_->add_option("--gpus", opt_.gpus, "GPUs to lay the model out on (default: the scenario's)")
      ->check(CLI::Range(1, 1 << 24));
  cmd_->add_option("--top", opt_.top, "Layouts confirmed and shown")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd_->add_option("--objective", opt_.objective,
                   "What ranks the layouts: tokens (per second per GPU) or mfu")
      ->check(CLI::IsMember({"tokens", "mfu"}))
      ->capture_default_str();
  cmd_->add_option("--confirm", opt_.confirm,
                   "Fidelity that re-runs the best --top layouts: cell or packet (the memoized "
                   "step: each distinct collective once, shared between layouts), whole (the "
                   "whole step, cell fidelity unless the scenario's is packet) or none")
      ->check(CLI::IsMember({"cell", "packet", "whole", "none"}))
      ->capture_default_str();
  cmd_->add_option("-o,--output", opt_.csv_path,
                   "CSV of every layout (default: SCENARIO stem + -plan.csv)");
  cmd_->add_option("--json", opt_.json_path, "Write the report and every layout as JSON");
  cmd_->add_option("--global-batch", opt_.global_batches,
                   "Global batch sizes to search (sequences; repeatable or comma-separated; "
                   "default: the scenario's)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd_->add_option("--threads", opt_.threads, "OpenMP threads per rank (confirming runs)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd_->add_option("--progress", opt_.progress_s,
                   "Seconds between progress lines on stderr (0.5 on a terminal, 10 in a log)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd_->add_flag("--prune", opt_.prune,
                 "Score only the layouts whose compute-only bound on the step can still reach the "
                 "best --top (the same best --top; the others' steps are not computed)");
  cmd_->add_flag("--quiet", opt_.quiet, "No progress output");
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string plan_duration_text(double s) {
  char buf[64];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60);
  }
  return buf;
}

// A progress line on stderr every interval (rank 0, unless --quiet): done of total, the rate
// and the ETA at that rate.
class Ticker {
 public:
  Ticker(bool show, double interval) : show_(show), interval_(interval) {
    tty_ = isatty(STDERR_FILENO) == 1;
  }
  void start() { t0_ = last_ = Clock::now(); }
  void tick(const char* what, std::size_t done, std::size_t total, const std::string& extra,
            bool force = false) {
    if (!show_) return;
    const auto now = Clock::now();
    if (!force && std::chrono::duration<double>(now - last_).count() < interval_) return;
    last_ = now;
    const double el = since(t0_);
    const double left = done > 0 ? el / static_cast<double>(done) * (total - done) : 0;
    std::fprintf(stderr, "%sstepsim plan: %s %zu of %zu (%.1f %%)%s, %s elapsed, ETA %s%s",
                 tty_ ? "\r" : "", what, done, total,
                 total ? 100.0 * static_cast<double>(done) / total : 100.0, extra.c_str(),
                 plan_duration_text(el).c_str(),
                 done > 0 ? plan_duration_text(left).c_str() : "unknown", tty_ ? "   " : "\n");
    drawn_ = tty_;
  }
  void end() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

 private:
  bool show_;
  double interval_;
  bool tty_ = false;
  bool drawn_ = false;
  Clock::time_point t0_, last_;
};

// The best --top (by the analytical rank) at the confirming fidelity.
Result<bool> confirm_best(const workload::Scenario& base, const topology::Topology& topo,
                          const PlanOptions& opt, int rank, int ranks, Ticker& tick,
                          PlanSearch& p) {
  const auto t0 = Clock::now();
  // The best --top in analytical order, each a different step: a layout with the same sizes
  // and the same analytical step as one already chosen (a ZeRO stage that changes memory only)
  // would confirm the same thing.
  std::vector<plan::Candidate*> best;
  for (plan::Candidate& c : p.rows) {
    if (c.rank == 0 || static_cast<int>(best.size()) >= opt.top) continue;
    bool twin = false;
    for (const plan::Candidate* b : best) twin = twin || same_step(*b, c);
    if (!twin) best.push_back(&c);
  }
  // The layouts share the collectives already run (the same costs as running them again).
  const auto cache = plan::make_confirm_cache();
  tick.start();
  for (std::size_t i = 0; i < best.size(); ++i) {
    if (stop_agreed(ranks)) {
      p.interrupted = true;
      break;
    }
    tick.tick(("confirming at " + opt.confirm + " fidelity").c_str(), i, best.size(),
              ": " + plan::layout_text(best[i]->layout), true);
    auto s = plan::layout_scenario(base, topo, best[i]->layout);
    if (!s) return s.error();
    auto o = plan::run_confirm(*s, topo, opt.confirm, opt.threads, rank, cache);
    if (!o) return Error{"layout " + plan::layout_text(best[i]->layout) + ": " + o.error().message};
    if (!o->complete) {  // stopped by a signal: not a confirmation
      p.interrupted = true;
      break;
    }
    best[i]->confirm = *o;
    best[i]->confirmed = true;
    ++p.confirmed;
  }
  const plan::ConfirmCacheStats shared = plan::confirm_cache_stats(*cache);
  tick.tick(("confirmed at " + opt.confirm + " fidelity").c_str(), p.confirmed, best.size(),
            opt.confirm == "whole"
                ? std::string()
                : ": " + std::to_string(shared.runs) + " collectives run, " +
                      std::to_string(shared.reused) + " taken from an earlier layout's runs",
            true);
  tick.end();
  p.confirm_wall_s = since(t0);
  return true;
}

int write_text(int rank, const std::string& option, const std::string& path,
               const std::string& text) {
  if (rank != 0) return kExitOk;
  if (auto ok = output::write_text_file(option, path, text); !ok) {
    return user_error(rank, ok.error().message);
  }
  return kExitOk;
}

// The server size: TP stays inside it (as validate() requires).
int nvlink_domain(const topology::Topology& topo) {
  std::uint32_t per_server = 1;
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (topo.is_server(v)) per_server = std::max(per_server, topo.nodes[v].gpus);
  }
  return static_cast<int>(per_server);
}

}  // namespace

int PlanCommand::execute(int rank, int ranks) {
  install_stop_handlers();
  auto loaded = load_scenario_file(opt_.scenario, opt_.sets);
  if (!loaded) return user_error(rank, loaded.error().message);
  workload::Scenario base = std::move(loaded).value();
  if (!base.jobs.empty()) {
    return user_error(rank, opt_.scenario +
                                ": jobs: plan searches the layouts of one model (a "
                                "scenario without jobs:)");
  }
  base.memory.check = "warn";  // the planner counts what does not fit; it is not an error here
  // The topology's own memory from its counts first: a huge one is refused before it is built.
  auto topo = load_topology_within_memory(base.topology, ranks, false);
  if (!topo) return user_error(rank, "topology: " + topo.error().message);
  // Once for the search: each layout's validate_layout() leaves it out.
  if (auto ok = workload::validate_fabric(base, *topo); !ok) {
    return user_error(rank, ok.error().message);
  }
  const int gpus = opt_.gpus > 0 ? opt_.gpus : base.par.world();
  if (static_cast<std::size_t>(gpus) > topo->gpu_count()) {
    return user_error(rank, "--gpus: " + std::to_string(gpus) + " GPUs, but " + base.topology +
                                " has " + std::to_string(topo->gpu_count()));
  }
  const std::string csv = opt_.csv_path.empty()
                              ? std::filesystem::path(opt_.scenario).stem().string() + "-plan.csv"
                              : opt_.csv_path;
  {
    std::vector<OutputFile> outputs{{"-o", csv}};
    add_output(outputs, *cmd_, "--json", opt_.json_path);
    if (auto ok = check_outputs_once(outputs, {opt_.scenario, base.topology}, rank); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  plan::SpaceOptions space;
  space.gpus = gpus;
  space.nvlink = nvlink_domain(*topo);
  space.global_batches = opt_.global_batches;
  if (space.global_batches.empty()) space.global_batches.push_back(base.par.global_batch);
  const std::vector<plan::Layout> layouts = plan::enumerate_layouts(base, space);

  PlanSearch p;
  p.scenario = opt_.scenario;
  p.model = base.model.name;
  p.topology = topo->name;
  p.gpu = base.gpu.name;
  p.gpus = gpus;
  p.capacity = static_cast<double>(base.gpu.hbm_bytes);
  p.objective = opt_.objective;
  p.confirm = opt_.confirm;
  p.top = opt_.top;
  p.enumerated = layouts.size();
  p.own = plan::layout_of(base.par);
  Ticker tick(!opt_.quiet && rank == 0,
              opt_.progress_s >= 0 ? opt_.progress_s : progress_interval());
  p.prune = opt_.prune;
  ScoringOptions scoring;
  scoring.prune = opt_.prune;
  scoring.top = opt_.top;
  scoring.objective = opt_.objective;
  scoring.ranks = ranks;
  tick.start();
  const PlanTick on_layout = [&](std::size_t done, std::size_t total, std::size_t fit) {
    tick.tick("layouts", done, total, ", " + std::to_string(fit) + " fit");
  };
  const auto searched = search_analytical(base, *topo, layouts, scoring, on_layout, p);
  tick.tick("layouts", p.done, layouts.size(),
            ", " + std::to_string(p.rows.size() - p.unfit) + " fit", true);
  tick.end();
  if (!searched) return user_error(rank, searched.error().message);
  rank_rows(p);
  if (!p.interrupted && opt_.confirm != "none") {
    if (auto ok = confirm_best(base, *topo, opt_, rank, ranks, tick, p); !ok) {
      return user_error(rank, ok.error().message);
    }
    rank_rows(p);
  }
  if (rank == 0) print_plan(p);
  if (const int rc = write_text(rank, "-o", csv, plan_csv(p)); rc != kExitOk) return rc;
  if (!opt_.json_path.empty() && rank == 0) {
    if (const int rc = write_json(rank, opt_.json_path, plan_json(p)); rc != kExitOk) return rc;
  }
  if (rank == 0 && !opt_.quiet) std::fprintf(stderr, "stepsim: wrote %s\n", csv.c_str());
  if (p.interrupted) return interrupted_exit_code();
  return kExitOk;
}

}  // namespace stepsim::cli
