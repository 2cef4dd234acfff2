#pragma once
// `stepsim bench phold`: the PHOLD benchmark with ROSS's parameters, printing committed events,
// events/s, windows, wall time, peak memory, the time split per rank and the digest.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepsim/bench/phold.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::cli {

class BenchPholdCommand {
 public:
  explicit BenchPholdCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  /// Runs the benchmark on this rank; returns the exit code.
  int execute(int rank, int ranks);

 private:
  /// Parses the times and checks the parameters, outputs and memory (collective: every rank).
  Result<bool> check_inputs(int rank, int ranks);
  void print_report(const std::vector<pdes::RunStats>& runs, const pdes::RunStats& st,
                    int ranks) const;
  [[nodiscard]] nlohmann::json json_report(const std::vector<pdes::RunStats>& runs,
                                           const pdes::RunStats& st, int ranks) const;

  CLI::App* cmd_;
  bench::PholdParams params_;
  std::string lookahead_ = "1us";
  std::string mean_ = "2us";
  std::string end_ = "2ms";
  int threads_ = 1;
  std::string partition_ = "block";
  std::string json_path_;
  bool quiet_ = false;
  bool per_rank_ = false;
  int repeat_ = 1;
};

}  // namespace stepsim::cli
