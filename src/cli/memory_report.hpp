#pragma once
// The per-GPU memory of a scenario as `stepsim run` and `stepsim check` report it: the memory
// check (a layout that does not fit is a user error unless memory.check is warn), the text
// summary, the --json object and the HDF5 /memory rows (workload/memory_model.hpp computes it).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/output/step_h5.hpp"
#include "stepsim/workload/memory_model.hpp"

namespace stepsim::cli {

/// One job's memory (a one-job scenario: one entry, an empty name).
struct JobMemory {
  std::string job;
  workload::MemoryReport report;
};

/// Every job's memory report.
std::vector<JobMemory> scenario_memory(const workload::Scenario& s);

/// Whether some job's peak stage exceeds the GPU's memory.
bool memory_exceeded(const std::vector<JobMemory>& m);

/// The memory check: with memory.check error, the first job that does not fit is the error;
/// with warn, rank 0 prints each as a warning on stderr.
Result<bool> check_gpu_memory(const workload::Scenario& s, const std::vector<JobMemory>& m,
                              int rank);

/// The summary: each job's peak stage, its total against the capacity and its largest terms;
/// `stages` also prints every stage's total (check).
void print_memory(const workload::Scenario& s, const std::vector<JobMemory>& m, bool stages);

/// --json's "memory" object.
nlohmann::json memory_json(const workload::Scenario& s, const std::vector<JobMemory>& m);

/// HDF5 /memory's rows and /meta's memory attributes.
void add_memory_meta(const workload::Scenario& s, const std::vector<JobMemory>& m,
                     output::RunMeta& meta);

}  // namespace stepsim::cli
