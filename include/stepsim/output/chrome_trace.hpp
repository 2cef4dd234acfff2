#pragma once
/// The step as a Chrome trace (JSON; chrome://tracing, ui.perfetto.dev), format of the Trace
/// Event Format document: one process per pipeline stage named after its GPU, threads for its
/// compute stream and its waits for other stages, and one async track per communication group
/// (TP, CP, EP, PP, DP) holding every collective of the step, blocking or overlapped. Ops and
/// collectives carry their bytes, layer, micro-batch and group as args.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/output/step_rows.hpp"

namespace stepsim::output {

/// Writes `r`'s ops and collectives to `path`; `gpu_stride` is the GPUs between consecutive
/// stages (stage s runs on GPU s x gpu_stride). The error names the file.
Result<bool> write_chrome_trace(const std::string& path, const StepRows& r,
                                std::uint32_t gpu_stride);

}  // namespace stepsim::output
