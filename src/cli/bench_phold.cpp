#include "src/cli/bench_phold.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/version.hpp"

namespace stepsim::cli {
namespace {

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

// Memory per LP (bytes): its state and the engine's per-LP records; its entry in the LP graph.
constexpr double kPholdLpBytes = 96;
constexpr double kGraphLpBytes = 32;

// What the ranks' peaks add up to.
struct RankTotals {
  std::int64_t rss_max = 0;
  std::int64_t rss_sum = 0;
  std::uint64_t pending = 0;
  std::uint64_t storage = 0;
  std::uint64_t remote = 0;
  [[nodiscard]] double bytes_per_event() const {
    return pending > 0 ? static_cast<double>(storage) / static_cast<double>(pending) : 0.0;
  }
};

RankTotals totals_of(const pdes::RunStats& st) {
  RankTotals t;
  for (const auto& r : st.per_rank) {
    t.rss_max = std::max(t.rss_max, r.peak_rss);
    t.rss_sum += r.peak_rss;
    t.pending += r.peak_pending;
    t.storage += r.queue_bytes;
    t.remote += r.sent_remote;
  }
  return t;
}

double events_per_s(const pdes::RunStats& st) {
  return st.wall_s > 0 ? static_cast<double>(st.events) / st.wall_s : 0.0;
}

}  // namespace

BenchPholdCommand::BenchPholdCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "phold",
      "PHOLD, the standard PDES benchmark (ROSS's definition): each event schedules one new event "
      "at now + lookahead + Exp(mean - lookahead); with probability --remote its destination is a "
      "uniformly random LP, else the LP itself. Run under mpirun for several ranks.");
  cmd_->add_option("--lps", params_.lps, "Number of logical processes")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 30));
  cmd_->add_option("--events-per-lp", params_.events_per_lp, "Initial events per LP")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  cmd_->add_option("--remote", params_.remote, "Probability that an event goes to a random LP")
      ->capture_default_str()
      ->check(finite_range(0.0, 1.0));
  cmd_->add_option("--lookahead", lookahead_, "Minimum delay of every event (a time, e.g. 1us)")
      ->capture_default_str();
  cmd_->add_option("--mean", mean_, "Mean total delay, lookahead included (a time, e.g. 2us)")
      ->capture_default_str();
  cmd_->add_option("--end", end_, "Simulated end time (a time, e.g. 2ms)")->capture_default_str();
  cmd_->add_option("--seed", params_.seed, "Seed of the random streams")->capture_default_str();
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--partition", partition_,
                   "Partitioner of LPs onto ranks: " + list_words(partition_choices()))
      ->capture_default_str();
  cmd_->add_option("--json", json_path_, "Also write the results as JSON to this file");
  cmd_->add_option("--repeat", repeat_,
                   "Run N times in this process; report the median run and every run's rate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd_->add_flag("--per-rank", per_rank_, "Print the time split of every rank (default: up to 8)");
  cmd_->add_flag("--quiet", quiet_, "Print only the summary lines, no progress");
  // A later repetition of an option wins, so sweep scripts can append overrides.
  for (CLI::Option* opt : cmd_->get_options()) {
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

Result<bool> BenchPholdCommand::check_inputs(int rank, int ranks) {
  const struct {
    const char* option;
    const std::string* text;
    SimTime* out;
  } times[] = {{"--lookahead", &lookahead_, &params_.lookahead},
               {"--mean", &mean_, &params_.mean},
               {"--end", &end_, &params_.end}};
  for (const auto& t : times) {
    auto parsed = parse_time(*t.text);
    if (!parsed) return Error{std::string(t.option) + ": " + parsed.error().message};
    *t.out = *parsed;
  }
  if (auto ok = params_.validate(); !ok) return ok;
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", json_path_);
  if (auto ok = check_outputs_once(outputs, {}, rank); !ok) return ok;
  // Every rank holds the LP graph; the LPs' state and pending events (an Event is 64 B, up to
  // twice the population in queues and exchange buffers) are split over the ranks.
  const double lps = params_.lps;
  const double spread = lps * (kPholdLpBytes + 2.0 * 64.0 * params_.events_per_lp);
  const int local = std::min(ranks, local_rank_count());
  char what[128];
  std::snprintf(what, sizeof what, "%u LPs with %u events each on %d rank%s of this node",
                params_.lps, params_.events_per_lp, local, local == 1 ? "" : "s");
  return agree_on_all_ranks(check_memory(local * (lps * kGraphLpBytes + spread / ranks), what));
}

int BenchPholdCommand::execute(int rank, int ranks) {
  if (auto ok = check_inputs(rank, ranks); !ok) return user_error(rank, ok.error().message);
  const pdes::LpGraph graph = bench::Phold(params_).graph();
  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  pdes::EngineOptions opts;
  opts.threads = threads_;
  opts.end = params_.end;
  opts.partitioner = partition_;
  if (!quiet_) {
    opts.progress_every = progress_interval();
    opts.on_progress = print_progress;
  }
  auto engine = pdes::Engine::create(graph, sync, opts);
  if (!engine) return user_error(rank, engine.error().message);
  install_stop_handlers();
  warn_if_threads_exceed_cpus(threads_, rank);

  std::vector<pdes::RunStats> runs;
  for (int i = 0; i < repeat_; ++i) {
    bench::Phold model(params_);
    runs.push_back(engine.value()->run(model));
    if (!runs.back().completed) break;
    STEPSIM_CHECK(runs.back().digest == runs.front().digest,
                  "a repeated PHOLD run gave a different digest");
  }
  finish_progress();
  // Report the median run by wall time (all of them on rank 0 when repeated).
  const pdes::RunStats& st =
      runs[median_run(runs.size(), [&](std::size_t i) { return runs[i].wall_s; })];
  if (rank != 0) return st.completed ? kExitOk : interrupted_exit_code();
  print_report(runs, st, ranks);
  if (!json_path_.empty()) {
    if (const int rc = write_json(rank, json_path_, json_report(runs, st, ranks)); rc != kExitOk) {
      return rc;
    }
  }
  return st.completed ? kExitOk : interrupted_exit_code();
}

void BenchPholdCommand::print_report(const std::vector<pdes::RunStats>& runs,
                                     const pdes::RunStats& st, int ranks) const {
  const RankTotals t = totals_of(st);
  std::printf("stepsim bench phold (stepsim %s)\n", kVersion);
  std::printf(
      "parameters       lps %u, events-per-lp %u, remote %g, lookahead %s, mean %s, end %s, seed "
      "%u\n",
      params_.lps, params_.events_per_lp, params_.remote, to_string(params_.lookahead).c_str(),
      to_string(params_.mean).c_str(), to_string(params_.end).c_str(), params_.seed);
  std::printf("engine           ranks %d, threads/rank %d, partition %s, lookahead %s\n", ranks,
              st.threads, partition_.c_str(), to_string(st.lookahead).c_str());
  if (!st.completed)
    std::printf("status           INTERRUPTED at %s\n", to_string(st.final_time).c_str());
  if (runs.size() > 1) {
    std::printf("repeats          %zu runs, events/s (M):", runs.size());
    for (const auto& r : runs) std::printf(" %.3f", static_cast<double>(r.events) / r.wall_s / 1e6);
    std::printf("; the median run follows\n");
  }
  std::printf("committed events %s\n", grouped(st.events).c_str());
  std::printf("wall time        %.3f s\n", st.wall_s);
  std::printf("events/s         %.3f M\n", events_per_s(st) / 1e6);
  std::printf("windows          %s (%.1f events/window)\n", grouped(st.windows).c_str(),
              st.windows ? static_cast<double>(st.events) / static_cast<double>(st.windows) : 0.0);
  std::printf(
      "remote events    %s (%.2f%% crossed ranks)\n", grouped(t.remote).c_str(),
      st.events ? 100.0 * static_cast<double>(t.remote) / static_cast<double>(st.events) : 0.0);
  std::printf("peak memory      %s max rank, %s all ranks\n",
              mib(static_cast<double>(t.rss_max)).c_str(),
              mib(static_cast<double>(t.rss_sum)).c_str());
  std::printf(
      "event storage    %.1f bytes per pending event (peak pending %s, sizeof(Event) %zu)\n",
      t.bytes_per_event(), grouped(t.pending).c_str(), sizeof(pdes::Event));
  std::printf("imbalance        %.3f events max/mean over ranks\n", st.event_imbalance());
  print_time_split(st, per_rank_ ? st.per_rank.size() : 8, /*thread_imbalance=*/true);
  std::printf("digest           %s\n", digest_hex(st.digest).c_str());
}

nlohmann::json BenchPholdCommand::json_report(const std::vector<pdes::RunStats>& runs,
                                              const pdes::RunStats& st, int ranks) const {
  const RankTotals t = totals_of(st);
  nlohmann::json j;
  j["benchmark"] = "phold";
  j["version"] = kVersion;
  j["params"] = {{"lps", params_.lps},
                 {"events_per_lp", params_.events_per_lp},
                 {"remote", params_.remote},
                 {"lookahead_ps", params_.lookahead.picoseconds()},
                 {"mean_ps", params_.mean.picoseconds()},
                 {"end_ps", params_.end.picoseconds()},
                 {"seed", params_.seed}};
  j["ranks"] = ranks;
  j["threads"] = st.threads;
  j["partition"] = partition_;
  j["completed"] = st.completed;
  j["committed_events"] = st.events;
  j["wall_s"] = st.wall_s;
  j["events_per_s"] = events_per_s(st);
  for (const auto& r : runs)
    j["events_per_s_runs"].push_back(static_cast<double>(r.events) / r.wall_s);
  j["windows"] = st.windows;
  j["peak_rss_max_bytes"] = t.rss_max;
  j["bytes_per_pending_event"] = t.bytes_per_event();
  j["event_imbalance"] = st.event_imbalance();
  j["digest"] = digest_hex(st.digest);
  for (const auto& r : st.per_rank) {
    j["per_rank"].push_back({{"rank", r.rank},
                             {"events", r.events},
                             {"compute_s", r.compute_s},
                             {"exchange_s", r.exchange_s},
                             {"allreduce_s", r.allreduce_s},
                             {"thread_imbalance", r.thread_imbalance},
                             {"peak_rss", r.peak_rss},
                             {"sent_remote", r.sent_remote},
                             {"lps", r.lps}});
  }
  return j;
}

}  // namespace stepsim::cli
