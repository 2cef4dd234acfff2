// The shipped GPUs. Peak rates and NVLink bandwidths are NVIDIA's data sheets (dense, i.e.
// without 2:4 sparsity; NVLink per direction = half the quoted bidirectional figure).
// nvlink_efficiency is fitted on one nccl-tests measurement per NVLink generation: an 8-GPU ring
// AllReduce of 2-8 GB reaches busbw 365-370 GB/s on H100 (validation N1) and 232 GB/s on A100
// (N4); the simulated ring loses under 0.1% to its pipeline at these sizes, so the factors are
// 367.5 / 450 = 0.817 and 232 / 300 = 0.773. H200 shares H100's NVLink 4; B200's NVLink 5 has
// no measurement here and takes H100's factor. nvls_efficiency is NCCL's own constant for NVLS
// on Hopper (0.85, src/graph/tuning.cc), not fitted: validation N2 is a prediction.
// gemm_efficiency is the achieved fraction of peak of a wave of full GEMM tiles (the compute
// model, docs/workload.md "Compute model", derives every GEMM's and the attention's time from
// it and their shapes). It is fitted on one published run per GPU and precision
// (../shared/validation/mfu.md): A100 BF16 0.656 on M1 (Megatron-LM's 1T GPT, 163 TFLOP/s),
// H100 BF16 0.648 on M3 (Megatron-Core's 462B, 459.9 TFLOP/s), H100 FP8 0.471 on M6's 128-GPU
// run (NeMo GPT-3 175B, 745 tokens/s/GPU). M2, M4, M5 and M6's 512-GPU run are predictions.
// H200 and B200 take H100's factors: no measurement here. sms: the SMs of each GPU (NVIDIA's
// A100, H100 and Blackwell architecture whitepapers: 108, 132, 132, 148).
// h800: H100's SXM die and rates with a narrower NVLink, taken as DeepEP's "~160 GB/s NVLink
// maximum bandwidth" per GPU per direction (DeepEP README, the H800 servers of its benchmarks),
// with NVLink 4's efficiency and H100's GEMM factors.
#include "stepsim/gpu/gpu_spec.hpp"

namespace stepsim::gpu {

const std::vector<GpuSpec>& gpu_presets() {
  constexpr std::int64_t kGB = 1'000'000'000;
  static const std::vector<GpuSpec> presets = {
      {"a100", 312e12, 0, 2.039e12, 80 * kGB, DataRate::gbps(2'400), 0.773, 0, 8, 0.656, 0.656,
       108},
      {"h100", 989e12, 1979e12, 3.35e12, 80 * kGB, DataRate::gbps(3'600), 0.817, 0.85, 8, 0.648,
       0.471, 132},
      {"h800", 989e12, 1979e12, 3.35e12, 80 * kGB, DataRate::gbps(1'280), 0.817, 0.85, 8, 0.648,
       0.471, 132},
      {"h200", 989e12, 1979e12, 4.8e12, 141 * kGB, DataRate::gbps(3'600), 0.817, 0.85, 8, 0.648,
       0.471, 132},
      {"b200", 2250e12, 4500e12, 8.0e12, 180 * kGB, DataRate::gbps(7'200), 0.817, 0.85, 8, 0.648,
       0.471, 148},
  };
  return presets;
}

Result<GpuSpec> gpu_preset(const std::string& name) {
  std::string names;
  for (const GpuSpec& g : gpu_presets()) {
    if (g.name == name) return g;
    names += (names.empty() ? "" : ", ") + g.name;
  }
  return Error{"unknown GPU '" + name + "' (allowed: " + names + ")"};
}

}  // namespace stepsim::gpu
