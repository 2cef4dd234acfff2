#pragma once
/// GPUs: peak compute, HBM and NVLink of the shipped models (vendor data sheets), and the
/// efficiency factors that turn them into achieved rates (each fitted on one published
/// measurement, see docs/collectives.md and ../shared/validation/).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::gpu {

struct GpuSpec {
  std::string name;
  double bf16_flops = 0;       ///< peak dense BF16 FLOP/s
  double fp8_flops = 0;        ///< peak dense FP8 FLOP/s (0: no FP8)
  double hbm_bandwidth = 0;    ///< bytes/s
  std::int64_t hbm_bytes = 0;  ///< capacity
  DataRate nvlink;             ///< NVLink bandwidth per direction
  /// Fraction of `nvlink` that collective copies (SM-driven, NCCL Simple) carry as payload.
  double nvlink_efficiency = 1.0;
  /// NVLink SHARP (NVLS) multicast/reduction traffic relative to plain copies (0: no NVLS).
  double nvls_efficiency = 0;
  std::uint32_t nvlink_domain = 8;  ///< GPUs behind one NVSwitch system
  /// Achieved fraction of the BF16 / FP8 peak of a wave of full GEMM tiles (every GEMM's and
  /// the attention's time follows from it and their shapes), fitted on one published training
  /// run each (docs/workload.md).
  double gemm_efficiency = 0.5;
  double fp8_gemm_efficiency = 0.5;
  /// Streaming multiprocessors: a GEMM's tiles run in waves of this many (wave quantization).
  int sms = 132;
};

/// The shipped GPUs: a100, h100, h800, h200, b200.
const std::vector<GpuSpec>& gpu_presets();
/// A shipped GPU by name; the error lists the names.
Result<GpuSpec> gpu_preset(const std::string& name);

}  // namespace stepsim::gpu
