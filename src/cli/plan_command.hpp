#pragma once
// `stepsim plan SCENARIO`: which layouts of the scenario's model run on its cluster, and which
// runs fastest. Enumerates the layouts (src/plan/layout_space.hpp), drops those that do not fit
// in HBM (counted, with the commonest reason), scores the rest at analytical fidelity in this
// process, re-runs the best K at a confirming fidelity and ranks them by it; prints the ranked
// table and how the confirmed ranking differs; writes every layout as a CSV row (and JSON).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace stepsim::cli {

struct PlanOptions {
  std::string scenario;
  std::vector<std::string> sets;  ///< --set key=value, as `run`'s
  int gpus = 0;                   ///< --gpus; 0: the scenario's GPUs
  int top = 5;                    ///< --top: layouts confirmed and shown
  std::string objective = "tokens";
  std::string confirm = "cell";
  std::string csv_path;  ///< -o; default SCENARIO stem + -plan.csv
  std::string json_path;
  std::vector<std::int64_t> global_batches;  ///< --global-batch; empty: the scenario's
  int threads = 1;
  double progress_s = -1;
  bool prune = false;  ///< --prune: skip the layouts whose bound cannot reach the best --top
  bool quiet = false;
};

class PlanCommand {
 public:
  explicit PlanCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  PlanOptions opt_;
};

}  // namespace stepsim::cli
