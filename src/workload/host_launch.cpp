// Kernel launches of a layer pass (host_launch.hpp; docs/workload.md, "host launches").
#include "src/workload/host_launch.hpp"

#include <algorithm>
#include <cstdint>

namespace stepsim::workload {

double quantize_kernels(const Scenario& s) {
  // Transformer Engine's current scaling (quantizer.cpp, Float8CurrentScalingQuantizer::
  // quantize_impl; common/recipe/current_scaling.cu): zero_amax_kernel and the amax kernel
  // (nvte_compute_amax), compute_scale_from_amax_kernel, then nvte_quantize (cast-transpose).
  // Its split_quantize for a grouped GEMM quantizes each expert's tensor in turn (a fused
  // multi-tensor cast exists only for delayed scaling).
  if (s.model.precision == "fp8") return 4;
  if (s.model.precision == "bf16") return 0;
  return 1;
}

HostKernels linear_kernels(const Scenario& s, double groups, bool quantized) {
  const double q = quantized ? quantize_kernels(s) : 0;
  const Parallelism& p = s.par;
  const bool sized = (p.dp > 0 || p.gpus > 0) && p.micro_batch > 0 && p.data_parallel() > 0;
  const double mb = sized ? static_cast<double>(std::max<std::int64_t>(p.micro_batches(), 1)) : 1;
  return {groups * (1 + q + q / mb), groups * (2 + q)};
}

double host_seconds(const Scenario& s, double kernels) {
  return kernels * s.compute.host_launch.seconds();
}

}  // namespace stepsim::workload
