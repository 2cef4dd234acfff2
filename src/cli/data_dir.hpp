#pragma once
// Where the executable finds the data files it ships with (topologies/, workloads/, params/):
// next to an installed binary (<prefix>/bin/stepsim reads <prefix>/share/stepsim), else in the
// source tree it was built from (build/apps/stepsim).

#include <string>

namespace stepsim::cli {

/// The directory holding topologies/, workloads/ and params/ for this executable.
std::string data_dir();

}  // namespace stepsim::cli
