#pragma once
// Pieces every benchmark report shares: the median of repeated runs, number formatting, the
// per-rank time split and the digest line (an interface other tools read: "digest <16 hex>").

#include <cstdint>
#include <functional>
#include <string>

#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::cli {

/// Engine options of a benchmark command: `threads` per rank, a simulated time limit, and a
/// progress display when `progress`; also installs the SIGINT/SIGTERM handlers and warns when
/// a rank has fewer CPUs than threads.
pdes::EngineOptions bench_engine_options(int threads, SimTime end, bool progress, int rank);

/// --fidelity and --cell of a command that simulates the fabric (docs/fidelity.md).
struct FidelityOptions {
  std::string fidelity = "packet";
  std::string cell;  ///< --cell; empty: fabric.cell's value (64KiB unless --set)
  /// Adds the options to `cmd`; `allowed` are the fidelities the command runs.
  void add(CLI::App* cmd, const std::vector<std::string>& allowed);
  /// Cell fidelity: --cell sets fabric.cell (the fabric's table: from the MTU to 4 MiB) and the
  /// NICs use it. The error is the user error to print.
  [[nodiscard]] Result<bool> apply(fabric::FabricParams& fp) const;
  /// "packet", "cell (64KiB cells)" or "analytical", for the reports.
  [[nodiscard]] std::string describe(const fabric::FabricParams& fp) const;
};

/// The engine's line of a packet- or cell-level report: "# <head>: <cut share>% of the traffic
/// crosses ranks, imbalance <x>; <n> windows, <w> per simulated us, <s> us of synchronisation
/// each" (head: "partition metis over 2 ranks", say).
void print_partition(const std::string& head, const nic::EngineTally& t);
/// The same for --json (key "engine").
nlohmann::json engine_json(const std::string& partition, int ranks, const nic::EngineTally& t);

/// Writes a benchmark's --json results to `path` (on rank 0); a file that cannot be written is
/// a user error. Returns the exit code.
int write_json(int rank, const std::string& path, const nlohmann::json& j);

/// Index of the median of `count` runs by wall time (`wall(i)` gives run i's seconds).
std::size_t median_run(std::size_t count, const std::function<double(std::size_t)>& wall);
/// 16,384,000-style thousands separators.
std::string grouped(std::uint64_t v);
/// The digest as 16 hex digits.
std::string digest_hex(std::uint64_t digest);
/// Prints "time split" and one line per rank (up to `max_ranks`).
void print_time_split(const pdes::RunStats& st, std::size_t max_ranks, bool thread_imbalance);

}  // namespace stepsim::cli
