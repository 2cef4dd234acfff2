// FP8 current scaling's quantization kernels (Transformer Engine's Float8CurrentScaling,
// Megatron's --fp8-recipe tensorwise): the HBM traffic that casts each FP8 GEMM's BF16 inputs.
#pragma once

#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// HBM bytes of one linear's FP8 casts (m tokens, n outputs, k inputs, `groups` experts), per
/// micro-batch. Per BF16 tensor: an amax reduction (one 2-byte read) and a fused cast-transpose
/// (one 2-byte read, two 1-byte writes: the row-major and the transposed copy that Hopper's FP8
/// GEMMs need for the backward). Forward: the activations (m x k); backward: the output
/// gradient (m x n); the weights (k x n) once per step (Transformer Engine's FP8 weight cache,
/// is_first_microbatch), charged to the forward as 1 / micro-batches of the step. Zero unless
/// model.precision is fp8 (the block-scaled recipes, mxfp8 and nvfp4, are not charged).
struct Fp8CastBytes {
  double fwd = 0;
  double bwd = 0;
};
Fp8CastBytes fp8_cast_bytes(const Scenario& s, double m, double n, double k, double groups = 1);

}  // namespace stepsim::workload
