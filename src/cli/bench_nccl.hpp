#pragma once
// `stepsim bench nccl allreduce|allgather|reducescatter|alltoall|broadcast|reduce|sendrecv`:
// nccl-tests (all_reduce_perf, ...) on the simulated GPUs, NICs and fabric. It takes
// nccl-tests' flags and prints its table (out-of-place and in-place time, algbw, busbw, #wrong)
// with every other line behind '#', so that nccl-tests' parsers read it unchanged.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cli/report.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::cli {

struct NcclSweep;

/// nccl-tests' own flags, with its defaults (nccl-tests README).
struct NcclTestsFlags {
  std::string min_bytes = "32M";   ///< -b
  std::string max_bytes = "32M";   ///< -e
  std::string step_bytes = "1M";   ///< -i: linear increment (when -f is not given)
  double step_factor = 0;          ///< -f: multiplication factor (0: linear steps)
  int threads = 1;                 ///< -t: threads per process
  int gpus_per_thread = 1;         ///< -g
  int iters = 20;                  ///< -n
  int warmup_iters = 5;            ///< -w
  int agg_iters = 1;               ///< -m
  int check = 1;                   ///< -c: 0 prints N/A in #wrong
  int average = 1;                 ///< -a
  int blocking = 0;                ///< -z
  std::string op = "sum";          ///< -o
  std::string datatype = "float";  ///< -d
  int root = 0;                    ///< -r
  // Accepted, each with a one-line note of what the simulation does instead.
  int parallel_init = 0;   ///< -p
  int cudagraph = 0;       ///< -G
  int report_cputime = 0;  ///< -C
  int timeout = 0;         ///< -T (seconds)
  int run_cycles = 1;      ///< -N
  int local_register = 0;  ///< -R
  int stream_null = 0;     ///< -y
};

/// stepsim's options of the benchmark: what is simulated and how.
struct NcclSimOptions {
  std::string topology;  ///< default: the source tree's topologies/rail-128gpu-800g.yaml
  int gpus = 0;          ///< --gpus (0: --np x -t x -g if one is given, else 16)
  int procs = 1;         ///< --np: nccl-tests' processes (mpirun -np N all_reduce_perf)
  std::string algo = "auto";
  std::string gpu = "h100";
  std::string proto = "auto";
  int channels = 8;
  std::string cc = "none";
  std::string lb = "ecmp";
  FidelityOptions fidelity;
  std::string nic_config;
  std::vector<std::string> sets;
  std::string end = "10s";
  int threads = 1;  ///< OpenMP threads per rank
  std::string partition = "metis";
  std::string json_path;
  bool quiet = false;
};

class BenchNcclCommand {
 public:
  explicit BenchNcclCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);
  struct Setup;   ///< the parsed command: parameters, topology, communicator, sizes
  struct Totals;  ///< what the sizes added up to
  struct Row;     ///< one size's row

 private:
  void add_nccl_tests_flags();
  void add_sim_options();
  void add_accepted_flags();
  /// The setup of the command line; the topology is built once its memory estimate from its
  /// counts fits `ranks` ranks (collective).
  [[nodiscard]] Result<Setup> prepare(int ranks) const;
  [[nodiscard]] Result<bool> load_parameters(Setup& s) const;
  [[nodiscard]] Result<bool> apply_env(Setup& s) const;
  [[nodiscard]] Result<bool> sweep(Setup& s) const;
  [[nodiscard]] Result<bool> check_iterations(Setup& s) const;
  void add_notes(Setup& s, int ranks) const;
  void print_preamble(const Setup& s) const;
  void print_row(const Row& r, const NcclSweep& w, std::int64_t count, int root) const;
  void print_footer(const Totals& t, int ranks) const;
  [[nodiscard]] Result<bool> simulate_size(const Setup& s, Row& row, Totals& t,
                                           nlohmann::json& extra, pdes::Sync& sync,
                                           const pdes::EngineOptions& opts) const;
  using SizeCache = std::map<std::int64_t, std::pair<Row, nlohmann::json>>;
  [[nodiscard]] Result<bool> run_size(const Setup& s, std::int64_t bytes, Totals& t,
                                      SizeCache& rows, const std::map<std::int64_t, double>& bounds,
                                      pdes::Sync& sync, const pdes::EngineOptions& opts) const;
  [[nodiscard]] int write_json_file(int rank, int ranks, const Setup& s, const Totals& t) const;
  [[nodiscard]] bool given(const char* option) const { return cmd_->count(option) > 0; }

  CLI::App* cmd_;
  std::string kind_;
  NcclTestsFlags flags_;
  NcclSimOptions sim_;
};

}  // namespace stepsim::cli
