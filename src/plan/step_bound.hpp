#pragma once
// A lower bound on a layout's step time from its compute alone (no collective costed, no step
// run): what `stepsim plan --prune` orders the layouts by and skips those with. The memoized
// executor's stage clocks only ever move forward, by compute (every layer's pass, full
// recomputation's extra forward, the GEMMs beside TP collectives, the output layer, the
// optimizer) and by waits and exposed communication (never negative). So each stage's clock at
// the end of the step is at least:
//   head(st)  the first forward of micro-batch 0 on every stage before it (its first pass reads
//             their output), plus every pass it computes, plus its optimizer; and
//   tail(st)  the end of the next stage's last pass (backward of chunk 0, micro-batch m - 1,
//             which this stage's last pass reads) plus this stage's last pass and its optimizer.
// The step is the latest stage's clock, so it is at least the largest of these: the compute of
// the busiest stage plus the pipeline's fill and drain (1F1B: (m + p - 1) (f + b) for equal
// stages). DualPipe (two mirrored stages per GPU, fed from both ends): the shorter of the two
// chains of first forwards before the stage, then every pass of its schedule and its optimizer.
// docs/plan.md states it for users; tests/unit/plan/step_bound_test.cpp checks it
// against the step.

#include "src/plan/plan_search.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::plan {

/// The lower bound (seconds) on the step of `s` (which passed validate()) at any fidelity the
/// memoized executor runs, slightly below the exact sum (a relative 1e-9) so that summing in
/// another order never puts it above the step.
///
/// With `comm`, each pass also holds what its layers' collectives always leave exposed on the
/// compute stream, priced by `comm`: TP collectives (after the GEMM beside them under TP
/// overlap), expert-TP and CP collectives, and EP's dispatch and combine with moe.overlap none
/// (with 1f1b they may hide behind the partner pass: not counted). A lower bound on the step
/// costed by the same `comm` (the planner's analytical model: the step it scores).
double step_lower_bound(const workload::Scenario& s, workload::CommModel* comm = nullptr);

/// The Outcome of a step of `step_s` seconds of `s` (tokens/s per GPU and MFU as the step
/// summary computes them; the rest 0): the objective's upper bound at the step's lower bound.
Outcome bound_outcome(const workload::Scenario& s, double step_s);

}  // namespace stepsim::plan
