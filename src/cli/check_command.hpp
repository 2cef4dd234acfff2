#pragma once
// `stepsim check FILE`: loads a topology file and prints what it builds (counts, link classes,
// bisection bandwidth, oversubscription, diameter, lookahead) and how well it partitions; or a
// scenario file and prints each pipeline stage's GPU memory (check_scenario.hpp).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace stepsim::cli {

/// The `check` subcommand: its options and what it prints.
class CheckCommand {
 public:
  explicit CheckCommand(CLI::App& parent);
  /// True when `check` was given on the command line.
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  /// Runs on every rank (all load the file; rank 0 prints); returns the exit code.
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  std::string file_;
  std::vector<std::string> sets_;  ///< --set, for a scenario
  int parts_ = 0;                  ///< 0: the MPI ranks of this run when more than 1, else 4
  std::string partition_;          ///< empty: every registered partitioner
};

}  // namespace stepsim::cli
