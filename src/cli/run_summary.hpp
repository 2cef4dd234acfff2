#pragma once
// `stepsim run`'s summary of one step: the text, the JSON object (other tools read its keys) and
// the helpers the HDF5 file's metadata shares with them.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/cli/memory_report.hpp"
#include "src/cli/run_command.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::cli {

// A loaded and validated run: the scenario (with --set and --fidelity applied) and its topology.
struct LoadedRun {
  std::vector<std::string> sets;  // --set, then fidelity=
  workload::Scenario scenario;
  topology::Topology topo;
};

// What the summary, the JSON and the HDF5 file report.
struct StepReport {
  const RunOptions& opt;
  const LoadedRun& run;
  const workload::StepResult& r;
  int ranks = 1;
  double wall_s = 0;
  bool samples_written = false;  ///< the file exists with /nodes, /ports, /samples (whole step)
  const std::vector<JobMemory>& memory;  ///< each job's memory per stage, estimated once per run
};

/// A whole step run with step.fold none that could fold `rails` rails: what to do about it.
std::string fold_hint(std::uint32_t rails);
/// The run's GPUs, model name(s) and tokens per step (several jobs: all of them).
std::int64_t run_gpus(const workload::Scenario& s);
std::string run_model(const workload::Scenario& s);
double run_tokens(const workload::Scenario& s);
/// "TP 8, PP 8 x 1, CP 1, EP 1, DP 16".
std::string parallel_text(const workload::Parallelism& p);
/// The text summary on stdout.
void print_summary(const StepReport& rep);
/// The summary as --json writes it.
nlohmann::json step_json(const StepReport& rep);

}  // namespace stepsim::cli
