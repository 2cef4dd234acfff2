#pragma once
/// The op program of one pipeline stage, as a static list: what every GPU of the stage does on
/// its compute stream and its data-parallel stream, in order, with no times. The whole-step
/// executor runs it on every GPU; the rules are the memoized executor's (memoized_executor.hpp
/// states them): TP/CP/EP collectives block the compute stream (with TP overlap, for
/// overlapped_seconds of the collective and the GEMM beside it), pipeline sends are asynchronous
/// and the receiver waits, gradient buckets are released to the data-parallel stream as the last
/// micro-batch's backward passes each layer (or all at the end), FSDP gathers each layer's
/// parameters one layer ahead, the optimizer waits for the data-parallel stream, and ZeRO 1/2
/// gathers the updated parameters after it (hidden behind the next step's first forward pass up
/// to that pass's length).
///
/// Collectives are given on the groups of the reference pipeline (data-parallel, TP and CP rank
/// 0, as Placement builds them); `translate_group` moves a group to another GPU's copy.

#include <cstdint>
#include <vector>

#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

/// What one op of a stage program does.
enum class StageOpKind : std::uint8_t {
  kCompute,      ///< the GPU computes for `seconds` (record: `record`)
  kCollective,   ///< a blocking collective on comm_ops[`comm`]
  kRecv,         ///< waits for the pipeline send of (`pass`, `chunk`, `micro`) from `peer`
  kSend,         ///< sends this pass's output to stage `peer` (asynchronous)
  kRelease,      ///< data-parallel ops up to `dp` (exclusive) may start
  kWaitDp,       ///< waits until data-parallel op `dp` is done (FSDP: a layer's parameters)
  kOptimizer,    ///< waits for every released data-parallel op, then the optimizer step
  kParamGather,  ///< ZeRO 1/2: releases the parameter gathers and ends after them (hidden part)
  kPassStart,    ///< a pass (`pass`) begins (after its input is in)
  kPassEnd,      ///< a pass (`pass`) ends (before its output is sent)
};

struct StageOp {
  StageOpKind kind = StageOpKind::kCompute;
  OpRecord record;         ///< kCompute: the timeline's record (stage, kind, micro, ...);
                           ///< kCollective: the layer's (its TP-overlapped GEMM, if any)
  double seconds = 0;      ///< kCompute, kOptimizer
  std::uint32_t comm = 0;  ///< kCollective: index into StageProgram::comm_ops
  std::uint32_t dp = 0;    ///< kRelease, kWaitDp
  int peer = 0;            ///< kRecv, kSend: the other stage
  PassKind pass = PassKind::kForward;  ///< kRecv, kSend: the kind of the pass that produced it
  std::uint32_t chunk = 0;             ///< kRecv, kSend: the producer's model chunk
  std::uint32_t micro = 0;             ///< kRecv, kSend
  /// kCollective (moe.overlap 1f1b): the partner pass's compute that runs beside this EP
  /// collective (moved here from the partner's layer; `record` is the partner's).
  double beside_s = 0;
};

/// One stage's program.
struct StageProgram {
  int stage = 0;
  std::vector<StageOp> ops;       ///< the compute stream, in order
  std::vector<CommOp> comm_ops;   ///< every collective the stage runs (reference groups)
  std::vector<std::uint32_t> dp;  ///< the data-parallel stream: comm_ops indices, in order
  /// kParamGather: the data-parallel ops from here on are the parameter gathers.
  std::uint32_t param_gather_first = 0;
  /// Optimizer time of the stage (kOptimizer's seconds).
  double optimizer_s = 0;
};

/// The program of every stage of `s` (which passed validate()).
std::vector<StageProgram> stage_programs(const Scenario& s);

/// Bytes of one pipeline send (pipeline_send_bytes).
std::int64_t stage_send_bytes(const Scenario& s);

/// The copy of reference group `ref` (global GPU indices of the reference pipeline) that holds
/// the GPU at (`t`, `c`, `d`) of stage `stage`: in each dimension where `ref` varies (TP, CP or
/// DP), contiguous groups (stride 1) are blocks and strided groups interleave; in the others the
/// GPU's own coordinate. `place` gives the layout.
std::vector<std::uint32_t> translate_group(const Placement& place,
                                           const std::vector<std::uint32_t>& ref, int t, int c,
                                           int d);

/// Coordinates of global rank `g`: tp, cp, dp, pp.
struct RankCoords {
  int t = 0, c = 0, d = 0, p = 0;
};
RankCoords coords_of(const Placement& place, std::uint32_t g);

}  // namespace stepsim::workload
