#include "src/cli/report.hpp"

#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/progress.hpp"
#include "stepsim/output/text_file.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

namespace stepsim::cli {

std::size_t median_run(std::size_t count, const std::function<double(std::size_t)>& wall) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return wall(a) < wall(b); });
  return order[order.size() / 2];
}

std::string grouped(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string digest_hex(std::uint64_t digest) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, digest);
  return hex;
}

void print_time_split(const pdes::RunStats& st, std::size_t max_ranks, bool thread_imbalance) {
  std::printf("time split       rank: compute / exchange / allreduce seconds%s\n",
              thread_imbalance ? " (thread imbalance)" : "");
  const std::size_t shown = std::min(max_ranks, st.per_rank.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& r = st.per_rank[i];
    std::printf("  rank %-4d      %.3f / %.3f / %.3f", r.rank, r.compute_s, r.exchange_s,
                r.allreduce_s);
    if (thread_imbalance) std::printf("  (%.2f)", r.thread_imbalance);
    std::printf("  %s events\n", grouped(r.events).c_str());
  }
  if (shown < st.per_rank.size()) {
    std::printf("  ... %zu more ranks (--per-rank)\n", st.per_rank.size() - shown);
  }
}

pdes::EngineOptions bench_engine_options(int threads, SimTime end, bool progress, int rank) {
  pdes::EngineOptions opts;
  opts.threads = threads;
  opts.end = end;
  if (progress) {
    opts.progress_every = progress_interval();
    opts.on_progress = print_progress;
  }
  install_stop_handlers();
  warn_if_threads_exceed_cpus(threads, rank);
  return opts;
}

int write_json(int rank, const std::string& path, const nlohmann::json& j) {
  if (rank != 0) return kExitOk;
  if (auto ok = output::write_text_file("--json", path, j.dump(2) + "\n"); !ok) {
    return user_error(rank, ok.error().message);
  }
  return kExitOk;
}

void FidelityOptions::add(CLI::App* cmd, const std::vector<std::string>& allowed) {
  cmd->add_option("--fidelity", fidelity,
                  "Network model: " + fidelity_help(allowed) + " (docs/fidelity.md)")
      ->capture_default_str()
      ->check(CLI::IsMember(allowed));
  const fabric::FabricParams defaults;
  cmd->add_option("--cell", cell,
                  "Cell fidelity: payload bytes per cell, fabric.cell (from the MTU to " +
                      to_string(Bytes(fabric::kMaxCellBytes)) + "; default " +
                      to_string(defaults.cell_size) + ")");
}

Result<bool> FidelityOptions::apply(fabric::FabricParams& fp) const {
  if (fidelity != "cell") return true;
  if (!cell.empty()) {
    if (auto ok = fabric::fabric_param_table(fp).set("fabric.cell", cell); !ok) {
      return Error{"--cell: " + ok.error().message};
    }
  }
  fp.use_cells();
  if (auto ok = fp.validate(); !ok) return Error{"--cell: " + ok.error().message};
  return true;
}

std::string FidelityOptions::describe(const fabric::FabricParams& fp) const {
  return fidelity == "cell" ? "cell (" + to_string(fp.cell) + " cells)" : fidelity;
}

void print_partition(const std::string& head, const nic::EngineTally& t) {
  std::printf("# %s: %.1f%% of the traffic crosses ranks, imbalance %.3f; %" PRIu64
              " windows, %.2f per simulated us, %.2f us of synchronisation each; window "
              "parallelism %.2f\n",
              head.c_str(), t.cut_share() * 100, t.imbalance, t.windows, t.windows_per_us(),
              t.sync_us_per_window(), t.window_parallelism());
}

nlohmann::json engine_json(const std::string& partition, int ranks, const nic::EngineTally& t) {
  return {{"partition", partition},
          {"ranks", ranks},
          {"cut_share", t.cut_share()},
          {"imbalance", t.imbalance},
          {"windows", t.windows},
          {"windows_per_us", t.windows_per_us()},
          {"sync_us_per_window", t.sync_us_per_window()},
          {"window_parallelism", t.window_parallelism()}};
}

}  // namespace stepsim::cli
