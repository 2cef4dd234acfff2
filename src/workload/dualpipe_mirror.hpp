#pragma once
// DualPipe's mirrored copies (moe.overlap dualpipe): model stage i runs on GPU i (chunk 0) and
// on GPU pp - 1 - i (chunk 1), and the two copies' gradients are summed by an all-reduce of
// the stage's gradients between the two GPUs. The memoized executor and the whole step's stage
// programs run the same op.

#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// The all-reduce of `stage`'s gradients (the shard its data-parallel reduction left, with
/// ZeRO) with its mirror stage, on the data-parallel stream, between the reference pipeline's
/// GPUs of the two stages (`stage` first).
CommOp mirror_reduce_op(const Scenario& s, const PipelineShape& shape, const Placement& place,
                        int stage);

}  // namespace stepsim::workload
