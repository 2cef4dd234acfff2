#pragma once
// `stepsim check SCENARIO.yaml`: a scenario (rather than a topology) is checked without
// simulating: it is loaded and validated against its topology, and the per-GPU memory of every
// pipeline stage is printed; a layout that does not fit is a user error (memory.check error).

#include <string>
#include <vector>

namespace stepsim::cli {

/// Whether `path` is a scenario file (a map with model, parallel or jobs), not a topology.
bool is_scenario_file(const std::string& path);

/// Checks the scenario with `sets` applied and prints its memory (rank 0); `ranks` of the run
/// (its topology is refused from its counts when it would not fit). The exit code.
int check_scenario(const std::string& path, const std::vector<std::string>& sets, int rank,
                   int ranks);

}  // namespace stepsim::cli
