#pragma once
/// The op program of one pipeline stage, as a static list: what every GPU of the stage does on
/// its compute stream and its data-parallel stream, in order, with no times. It is the step's
/// schedule, written once: the whole-step executor runs it on every GPU, the memoized executor
/// prices each op with its memoized cost (memoized_executor.hpp). The rules: TP/CP/EP collectives
/// block the compute stream (with TP overlap, for overlapped_seconds of the collective and the GEMM
/// beside it), pipeline sends are asynchronous and the receiver waits, gradient buckets are
/// released to the data-parallel stream as the last micro-batch's backward passes each layer (or
/// all at the end), FSDP gathers each layer's parameters one layer ahead, the optimizer waits for
/// the data-parallel stream, and ZeRO 1/2 gathers the updated parameters after it (hidden behind
/// the next step's first forward pass up to that pass's length).
///
/// Collectives are given on the groups of the reference pipeline (data-parallel, TP and CP rank
/// 0, as Placement builds them); `translate_group` moves a group to another GPU's copy.

#include <cstdint>
#include <memory>
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
  kPassStart,    ///< a pass (`pass`, `chunk`, `micro`, `grad`) begins (after its input is in)
  kPassEnd,      ///< a pass (`pass`, `chunk`, `micro`, `grad`) ends (before its output is sent)
  /// StageProgramStream only: the ops of StageProgram::bodies[`dp`], their records' micro-batch
  /// `micro` (stage_programs writes them out instead).
  kBody,
};

struct StageOp {
  StageOpKind kind = StageOpKind::kCompute;
  OpRecord record;         ///< kCompute: the timeline's record (stage, kind, micro, ...);
                           ///< kCollective: the layer's (its TP-overlapped GEMM, if any)
  double seconds = 0;      ///< kCompute, kOptimizer
  std::uint32_t comm = 0;  ///< kCollective: index into StageProgram::comm_ops
  std::uint32_t dp = 0;    ///< kRelease, kWaitDp
  int peer = 0;            ///< kRecv, kSend: the other stage
  /// kRecv, kSend: the kind of the pass that produced it; kPassStart, kPassEnd: the pass's.
  PassKind pass = PassKind::kForward;
  std::uint32_t chunk = 0;  ///< kRecv, kSend: the producer's model chunk; kPass*: the pass's
  std::uint32_t micro = 0;  ///< kRecv, kSend, kPassStart, kPassEnd
  GradPart grad = GradPart::kWhole;  ///< kPassStart, kPassEnd: what of a backward runs
  /// kPassStart, kPassEnd: the first pass of two that start together (DualPipe's F&B pair: both
  /// inputs received first, then one pass after the other); the second one ends the pair.
  bool paired = false;
  /// kCollective (moe.overlap): the partner pass's compute beside this EP collective. A
  /// ProgramUse::kWholeStep program moves it here from the partner's layer (`record` is the
  /// partner's); a kMemoized one leaves it in the partner's pass and only hides the collective
  /// behind it (`record` is the layer's own).
  double beside_s = 0;
};

/// Who runs the program. The two differ only where the memoized executor, which costs each
/// collective alone and needs no causal order between the passes of a pair, keeps its own
/// accounting:
/// - moe.overlap: kWholeStep merges each partnered forward and backward into one pair that goes
///   layer by layer together (Megatron-Core's combined 1F1B, DualPipe's F&B chunks), the
///   partner's compute moved into the EP collectives; kMemoized runs every pass alone and hides
///   each EP collective behind its share of the partner's layer compute (ep_overlap.hpp).
/// - DualPipe's mirror all-reduce: kWholeStep names its two GPUs in ascending order (one
///   communicator for both stages); kMemoized in the stage's own order (this GPU first).
enum class ProgramUse : std::uint8_t { kWholeStep, kMemoized };

/// One stage's program.
struct StageProgram {
  int stage = 0;
  std::vector<StageOp> ops;  ///< the compute stream, in order
  /// ops[passes_end...]: the stage's tail after its last pass (the last gradient buckets,
  /// DualPipe's mirror all-reduce, the optimizer, the parameter gathers).
  std::uint32_t passes_end = 0;
  std::vector<CommOp> comm_ops;  ///< every collective the stage runs (reference groups)
  /// comm_ops[0...repeated): the ones built once and run again and again (every layer's TP, CP
  /// and EP collectives by pass kind and layer kind, FSDP's gather of one layer); the others
  /// (gradient buckets, mirror all-reduce, parameter gathers) run once each.
  std::uint32_t repeated = 0;
  std::vector<std::uint32_t> dp;  ///< the data-parallel stream: comm_ops indices, in order
  /// kParamGather: the data-parallel ops from here on are the parameter gathers.
  std::uint32_t param_gather_first = 0;
  /// Optimizer time of the stage (kOptimizer's seconds).
  double optimizer_s = 0;
  /// StageProgramStream: the ops of a pass that differ between micro-batches only in their
  /// records' micro-batch (kCompute and kCollective ops; no releases to the data-parallel stream),
  /// built the first time and named by kBody after.
  std::vector<std::vector<StageOp>> bodies;
};

/// The program of every stage of `s` (which passed validate()), for `use`.
std::vector<StageProgram> stage_programs(const Scenario& s,
                                         ProgramUse use = ProgramUse::kWholeStep);

/// Every stage's program built as it is read, a pass (or a pair) at a time: the memoized
/// executor runs the ops of one and drops them (`program(st).ops.clear()`) before it asks for
/// the next, so the ops it holds stay few. The same ops as stage_programs, in the same order,
/// but that a pass built before is one kBody op (its ops in StageProgram::bodies).
class StageProgramStream {
 public:
  StageProgramStream(const Scenario& s, ProgramUse use);  // `s` must outlive it
  StageProgramStream(const StageProgramStream&) = delete;
  StageProgramStream& operator=(const StageProgramStream&) = delete;
  ~StageProgramStream();
  /// Stage `stage`'s program so far: its collectives (comm_ops[0...repeated) from the start),
  /// its data-parallel stream, and the ops appended since they were last dropped.
  [[nodiscard]] StageProgram& program(int stage);
  /// Appends the stage's next pass (DualPipe: its F&B pair; whole step, moe.overlap 1f1b: a
  /// merged pair) with its receives and sends, ending at its last send. False: the passes are
  /// through.
  bool next_group(int stage);
  /// After the last pass: appends the tail (passes_end: where it starts in ops).
  void tail(int stage);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

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
