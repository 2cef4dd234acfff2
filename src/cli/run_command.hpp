#pragma once
// `stepsim run SCENARIO.yaml`: one training step of the scenario's model on its topology;
// prints step time, MFU, where the time went, busbw per communication group and what the fabric
// saw, and the digest; --json writes the same summary.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stepsim::cli {

/// `stepsim run`'s command line.
struct RunOptions {
  std::string scenario;
  std::vector<std::string> sets;  ///< --set key=value (a value a,b,c: a sweep, src/cli/sweep.hpp)
  std::string fidelity;           ///< --fidelity: empty, or the scenario's fidelity key
  int threads = 1;
  std::string partition = "auto";  ///< --partition; "auto" is resolved in execute()
  std::string json_path;
  std::string csv_path;  ///< --csv: the sweep's table (a one-row table for one run)
  std::string output;    ///< HDF5 file; default: the scenario's stem + .h5
  bool no_output = false;
  std::string trace;                   ///< Chrome/Perfetto trace JSON
  std::string trace_gpus;              ///< --trace-gpus LIST (the whole step); empty: the default
  std::int64_t trace_max_events = -1;  ///< --trace-max-events; < 0: not given (the default)
  double progress_s = -1;  ///< --progress: seconds between progress lines; < 0: the default
  bool quiet = false;
  bool profile = false;  ///< --profile (or STEPSIM_PROFILE=1): time per phase on stderr
  // Faults and stragglers inside the step (step.mode whole): link faults as bench fabric's
  // --fault, a GPU's NIC retraining its PCIe link (GPU:GEN@TIME), a slow GPU (GPU:FACTOR).
  std::vector<std::string> faults;
  std::vector<std::string> pcie_faults;
  std::vector<std::string> slow_gpus;
  std::vector<std::string> background;  ///< PATTERN@RATE[,UNTIL]
};

class RunCommand {
 public:
  explicit RunCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  /// One step of `o` (one variant of a sweep: its summary goes to `row`, rank 0's).
  int execute_one(int rank, int ranks, RunOptions& o, nlohmann::json* row);
  CLI::App* cmd_;
  RunOptions opt_;
};

}  // namespace stepsim::cli
