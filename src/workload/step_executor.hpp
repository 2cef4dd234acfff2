#pragma once
// A step executor runs the op schedules of a step's GPUs and leaves a StepTrace for
// summarize_step. MemoizedExecutor (memoized_executor.hpp) runs the pipeline of rank 0 on
// per-stage clocks with a CommModel per collective. The whole-step mode of issue 14 is a second
// implementation that runs every GPU's schedule on the PDES (docs/workload.md).

#include <functional>

#include "stepsim/core/result.hpp"
#include "stepsim/workload/step_summary.hpp"

namespace stepsim::workload {

class StepExecutor {
 public:
  /// Called after each pipeline pass with the simulated time; false stops the step.
  using Progress = std::function<bool(double)>;

  virtual ~StepExecutor() = default;
  /// Runs the step once. An error is a user error (a collective that cannot run); a stop
  /// (`end`, a signal, the progress callback) is not: StepTrace::stop says why and the trace
  /// holds what was done.
  virtual Result<StepTrace> run() = 0;
};

}  // namespace stepsim::workload
