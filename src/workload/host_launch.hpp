// The host's side of a layer pass: the kernels the CPU launches one by one in eager mode
// (PyTorch, Megatron-Core and Transformer Engine without CUDA graphs). When launching them takes
// longer than the GPU runs them, the pass is launch-bound and takes the host's time.
#pragma once

#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// Kernel launches of one micro-batch's pass (forward, backward).
struct HostKernels {
  double fwd = 0;
  double bwd = 0;
};

/// Kernels of quantizing one BF16 tensor for an FP8 GEMM: FP8 current scaling (model.precision
/// fp8; Transformer Engine's Float8CurrentScalingQuantizer) zeroes the amax, reduces it over the
/// tensor, computes the scale from it and casts (with the transpose): 4 kernels. The
/// block-scaled recipes (mxfp8, nvfp4) compute their scales inside the one cast kernel: 1.
/// BF16: none.
double quantize_kernels(const Scenario& s);

/// One linear layer (`groups` experts of a grouped GEMM: one GEMM kernel each, as Transformer
/// Engine's GroupedLinear runs them on Hopper, one cuBLAS call per expert) on one micro-batch:
/// forward, its GEMMs and the quantization of its input; backward, the input-gradient and
/// weight-gradient GEMMs and the quantization of the output gradient. The weights are quantized
/// once per step (Transformer Engine's FP8 weight cache), 1 / micro-batches of a cast per
/// forward. `quantized` false: a linear outside FP8 (the router).
HostKernels linear_kernels(const Scenario& s, double groups, bool quantized = true);

/// Seconds the host takes to launch `kernels` kernels (compute.host_launch each).
double host_seconds(const Scenario& s, double kernels);

}  // namespace stepsim::workload
