#pragma once
// `stepsim list WHAT`: prints a registry (topology generators with their parameters and link
// classes; partitioners).

#include <CLI/CLI.hpp>
#include <string>

namespace stepsim::cli {

/// The `list` subcommand: prints a registry by name.
class ListCommand {
 public:
  explicit ListCommand(CLI::App& parent);
  /// True when `list` was given on the command line.
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  /// Prints on rank 0; returns the exit code.
  int execute(int rank);

 private:
  CLI::App* cmd_;
  std::string what_;
};

}  // namespace stepsim::cli
