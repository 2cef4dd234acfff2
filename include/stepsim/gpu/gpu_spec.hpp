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
  /// Peak dense MXFP8 / NVFP4 FLOP/s (0: not supported). MXFP8: FP8 elements with one E8M0
  /// scale per 32; NVFP4: FP4 (E2M1) elements with one E4M3 scale per 16 (Blackwell).
  double mxfp8_flops = 0;
  double nvfp4_flops = 0;
  /// An MoE layer's memory-bound work (tokens permuted into expert order and back, the
  /// weighted combine, the routed activation, the router) as HBM bytes per routed
  /// (token, expert) pair and hidden unit in the forward (backward: twice). Fitted per GPU
  /// generation on one MoE step (docs/workload.md).
  double moe_elementwise_bytes = 0;
};

/// The GEMM precisions `model.precision` takes.
inline constexpr const char* kPrecisions[] = {"bf16", "fp8", "mxfp8", "nvfp4"};
/// The peak dense FLOP/s of `gpu` at `precision` (bf16, fp8, mxfp8, nvfp4); 0 when it has none.
[[nodiscard]] double peak_flops(const GpuSpec& gpu, const std::string& precision);
/// Bytes per GEMM operand element at `precision`, block scales included (bf16 2, fp8 1, mxfp8
/// 1 + 1/32, nvfp4 1/2 + 1/16).
[[nodiscard]] double operand_bytes(const std::string& precision);

/// The shipped GPUs (`stepsim list gpus` would print them; --gpu and gpu.model take their names).
const std::vector<GpuSpec>& gpu_presets();
/// Their names, in the table's order.
std::vector<std::string> gpu_preset_names();
/// The same as "a100, h100, ..." for help texts and errors.
std::string gpu_preset_list();
/// A shipped GPU by name; the error lists the names.
Result<GpuSpec> gpu_preset(const std::string& name);

}  // namespace stepsim::gpu
