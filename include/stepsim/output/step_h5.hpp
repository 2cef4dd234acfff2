#pragma once
/// The step's HDF5 file (schema in docs/hdf5-schema.md, version kSchemaVersion): /meta
/// (attributes), /ops, /collectives, /flows, /links, /memory. Every rank holds every row; rank 0
/// writes the file alone (HDF5's POSIX driver) into chunked, compressed datasets and broadcasts
/// its outcome, so the contents are the same for any number of ranks and threads.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "stepsim/core/result.hpp"
#include "stepsim/output/step_rows.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::output {

/// Longest scenario text kept as the /meta attribute `scenario`; a longer one is the scalar
/// string dataset /meta/scenario (attributes live in a 64 KiB object header).
inline constexpr std::size_t kMaxAttributeText = 60'000;

inline constexpr int kSchemaVersion = 3;

/// One row of /memory: a term of the memory of one pipeline stage's most-loaded GPU.
struct MemoryRow {
  std::uint32_t job = 0;    ///< the /jobs row (0 for one job)
  std::uint32_t stage = 0;  ///< pipeline stage
  std::string term;         ///< the term's name (memory_model.hpp)
  double bytes = 0;
};

/// What /meta records besides the step's numbers.
struct RunMeta {
  std::string scenario_path;
  std::string scenario_text;  ///< the file as read
  std::string sets;           ///< the --set overrides, one per line
  std::string fidelity;
  std::string step_mode;  ///< the step mode that ran: whole or memoized (step.mode auto resolved)
  std::int64_t cell_bytes = 0;  ///< cell fidelity: payload bytes per cell (0 otherwise)
  std::string model;
  std::string topology;
  std::string gpu;
  std::int64_t gpus = 0;
  std::int64_t ranks = 1;
  std::int64_t threads = 1;
  double wall_s = 0;           ///< rank 0's (broadcast)
  double tokens_per_step = 0;  ///< global batch x sequence length
  // The per-GPU memory model (/memory and /meta's memory_* attributes).
  std::vector<MemoryRow> memory;
  std::string memory_check = "error";  ///< memory.check
  bool memory_exceeded = false;        ///< some stage exceeds the capacity (memory.check warn)
  double memory_peak = 0;              ///< bytes of the peak stage (of every job)
  std::uint32_t memory_peak_stage = 0;
  double memory_capacity = 0;  ///< gpu.hbm_bytes
};

/// Writes the file; every rank calls it with the same result (collective: rank 0 writes, every
/// rank returns its outcome). `path` is truncated. The error
/// says which file could not be written. With `topo`, also /nodes and /ports, the name table of
/// its nodes and ports (samples_h5.hpp).
/// `append`: the file exists (the whole step's /nodes, /ports and /samples, written while the
/// run went): it is opened and the step's tables are added; the name tables are not rewritten.
/// Starts HDF5 before MPI (call it first): the writers close their files themselves, and HDF5
/// never closes one again at exit or MPI_Finalize (where a file that failed on a full disk would
/// crash it).
void init_hdf5();

Result<bool> write_step_h5(const std::string& path, const RunMeta& meta, const StepRows& r,
                           MPI_Comm comm, const topology::Topology* topo = nullptr,
                           bool append = false);

}  // namespace stepsim::output
