#pragma once
/// The step's result as the output writers receive it (output/step_rows.hpp): plain rows of the
/// HDF5 tables and the Perfetto trace, and the status word /meta and the JSON record.

#include <cstdint>

#include "stepsim/output/step_rows.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

/// The step's status: complete, interrupted (a signal), failed_transfers (RDMA transfers past
/// their retry limit) or stopped_at_end (the scenario's `end`).
const char* step_status(const StepResult& r);

/// How step_rows gives the op and collective rows.
enum class RowsHeld : std::uint8_t {
  kHeld,     ///< in StepRows::ops and colls (what the Perfetto trace needs)
  kOnDemand  ///< made from `r` by StepRows::ops_fill and colls_fill, which read `r` (it must
             ///< outlive the rows): the HDF5 file's tables without a copy of them in memory
};

/// `r` as rows; `gpu_stride` is the GPUs between consecutive stages of one job (stage s runs on
/// GPU s x gpu_stride; a multi-job run's stages name their GPUs in JobResult::stage_gpu).
output::StepRows step_rows(const StepResult& r, std::uint32_t gpu_stride,
                           RowsHeld held = RowsHeld::kHeld);

}  // namespace stepsim::workload
