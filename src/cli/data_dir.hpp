#pragma once
// Where the executable finds the data files it ships with (topologies/, workloads/, params/):
// next to an installed binary (<prefix>/bin/stepsim reads <prefix>/share/stepsim), else in the
// source tree it was built from (build/apps/stepsim).

#include <string>

#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {

/// The directory holding topologies/, workloads/ and params/ for this executable.
std::string data_dir();

/// A scenario or topology file named on the command line: `path` itself when it exists (or is
/// absolute), else the shipped file of that name, looked for in data_dir() and in its `subdir`
/// ("workloads" or "topologies"): `stepsim run gpt3-175b.yaml` from any directory. `path`
/// unchanged when none exists (its loader then reports it; see not_found_note()).
std::string find_data_file(const std::string& path, const std::string& subdir);

/// The loader's error for a file that find_data_file() did not find either, with where else it
/// looked; any other error unchanged.
Error not_found_note(Error e, const std::string& path, const std::string& subdir);

/// workload::load_scenario() of a scenario named on the command line (find_data_file() in
/// workloads/), its topology found the same way (in topologies/) when a --set names a shipped
/// one from elsewhere.
Result<workload::Scenario> load_scenario_file(const std::string& path,
                                              const std::vector<std::string>& sets);

}  // namespace stepsim::cli
