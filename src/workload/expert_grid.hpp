#pragma once
// Megatron's MoE parallel folding: the rule a layout's expert grid must follow
// (scenario_validate.cpp; placement.hpp builds its groups).

#include "stepsim/core/result.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// Whether the expert grid (parallel.etp x parallel.ep x expert-DP) folds over a stage's
/// tp x cp x dp GPUs; the error names the keys.
Result<bool> validate_expert_grid(const ModelSpec& m, const Parallelism& p);

}  // namespace stepsim::workload
