#pragma once
/// The step as a Chrome trace (JSON; chrome://tracing, ui.perfetto.dev), format of the Trace
/// Event Format document. The memoized step: one process per pipeline stage named after its GPU.
/// The whole step: one process per traced GPU (StepRows::gpu_trace), named after the GPU, its job
/// and stage, holding that GPU's ops and the collectives it took part in. Each process has
/// threads for its compute stream and its waits for other stages, and one async track per
/// communication group (TP, CP, EP, PP, DP) with its collectives, blocking or overlapped. Ops and
/// collectives carry their bytes, layer, micro-batch and group as args.
///
/// A size cap: at most `max_events` ops and collective begin/end events, the earliest first;
/// past it the trace stops (every event before the cut kept), and says so with a global instant
/// event at the cut and `otherData.note`.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/output/step_rows.hpp"

namespace stepsim::output {

/// The default cap: about 160 MB of JSON (161 B per event, BENCHMARKS.md).
inline constexpr std::uint64_t kDefaultTraceEvents = 1000000;

struct TraceOptions {
  /// The memoized step: the GPUs between consecutive stages (stage s runs on GPU s x stride).
  std::uint32_t gpu_stride = 1;
  std::uint64_t max_events = kDefaultTraceEvents;
};

/// What was written: the events (ops, collective begins and ends) and, past the cap, the
/// events left out, the time of the cut and the note the trace carries (empty: nothing left out).
struct TraceWritten {
  std::uint64_t events = 0;
  std::uint64_t left_out = 0;
  double cut_s = -1;
  std::string note;
};

/// Writes `r`'s ops and collectives to `path`. The error names the file.
Result<TraceWritten> write_chrome_trace(const std::string& path, const StepRows& r,
                                        const TraceOptions& opt);

}  // namespace stepsim::output
