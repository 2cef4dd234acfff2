#pragma once
// Sweeps of `stepsim run`: a --set whose value is a comma-separated list (and a --fidelity list)
// is an axis; the run is the cartesian product of the axes, one variant after another in one
// process. Each variant's summary is a row of one CSV and one JSON table that carry what varies
// (the axes), the resolved inputs (parallel sizes, topology, GPU, fidelity, every --set) and
// every output of the summary.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim::cli {

/// One variant of a sweep: its --set assignments (the axes' values in place of the lists) and
/// the axes' key=value pairs that make it differ from the others.
struct SweepVariant {
  std::vector<std::string> sets;
  std::vector<std::pair<std::string, std::string>> varying;
  std::string name;  ///< "pp4-topology_a": what the default output names carry
};

/// Whether the value of this --set key is a list of its own, never a sweep axis (a job's GPUs:
/// jobs.NAME.gpus=2-3,6-7).
bool takes_comma_list(const std::string& key);

/// The variants of `sets` (key=value, a value a,b,c being an axis) with --fidelity `fidelity`
/// (empty, one fidelity, or a list) as the last set. One variant (no axis): `varying` empty.
/// The error names the --set with an empty list item.
Result<std::vector<SweepVariant>> expand_sweep(const std::vector<std::string>& sets,
                                               const std::string& fidelity);

/// What a single run's --set assignments and --fidelity make of a default output name, as a
/// sweep names its variants ("parallel.pp=4", "fidelity=cell" -> "pp4-fidelity_cell"); a name
/// over 96 characters keeps its start and a CRC-32 of the whole.
std::string settings_name(const std::vector<std::string>& sets, const std::string& fidelity);

/// `path` with `-name` before its extension ("out.h5" -> "out-pp4.h5").
std::string variant_path(const std::string& path, const std::string& name);

/// The table's columns: the rows flattened (nested objects as dotted keys, string lists joined
/// by spaces, other lists left out), the columns in the order first seen.
std::string sweep_csv(const std::vector<nlohmann::json>& rows);

}  // namespace stepsim::cli
