// The shipped GPUs. Peak rates and NVLink bandwidths are NVIDIA's data sheets (dense, i.e.
// without 2:4 sparsity; NVLink per direction = half the quoted bidirectional figure).
// nvlink_efficiency is fitted on one nccl-tests measurement per NVLink generation: an 8-GPU ring
// AllReduce of 2-8 GB reaches busbw 365-370 GB/s on H100 (validation N1) and 232 GB/s on A100
// (N4); the simulated ring loses under 0.1% to its pipeline at these sizes, so the factors are
// 367.5 / 450 = 0.817 and 232 / 300 = 0.773. H200 shares H100's NVLink 4; B200's NVLink 5 has
// no measurement here and takes H100's factor. nvls_efficiency is NCCL's own constant for NVLS
// on Hopper (0.85, src/graph/tuning.cc), not fitted: validation N2 is a prediction.
// gemm_efficiency is the achieved fraction of peak of the main loop of a wave of full GEMM
// tiles (the compute model, docs/workload.md "Compute model", derives every GEMM's time from it
// and their shapes, and the attention's where no attention rate is published: Hopper's is
// cuDNN's; each wave's epilogue, its outputs stored at the HBM rate, comes on top). It is fitted on
// one published run per GPU and precision
// (../shared/validation/mfu.md): A100 BF16 0.674 on M1 (Megatron-LM's 1T GPT, 163 TFLOP/s),
// H100 BF16 0.682 on M3 (Megatron-Core's 462B, 459.9 TFLOP/s), H100 FP8 0.569 on M6's 128-GPU
// run (NeMo GPT-3 175B, 745 tokens/s/GPU, FP8 casts apart). M2, M4, M5 and M6's 512-GPU run are
// predictions. H200 and B200 take H100's factors: no measurement here. sms: the SMs of each GPU
// (NVIDIA's A100, H100 and Blackwell architecture whitepapers: 108, 132, 132, 148). hbm_bytes: the
// data sheets' memory (A100 80GB, H100 SXM 80GB, H200 141GB, B200 180GB, B300 and GB300 288GB,
// GB200 186GB), in binary units as the
// HBM stacks are built (nvidia-smi reports 81,920 MiB on an A100 80GB, 81,559 MiB on an H100).
// Blackwell and Blackwell Ultra, per GPU, dense (the data sheets quote sparse figures for FP16
// and FP8; dense is half): B200 from the HGX B200 data sheet (FP4 144 PFLOPS sparse for 8 GPUs:
// NVFP4 9 PFLOPS dense); B300 from the HGX B300 / DGX B300 data sheets (FP16/BF16 36, FP8 72
// PFLOPS sparse and FP4 108 PFLOPS dense for 8 GPUs; 2.3 TB HBM3e = 288 GB and 8 TB/s per GPU);
// GB200 and GB300 from the GB200 NVL72 and GB300 NVL72 data sheets, divided by their 72 GPUs
// (GB200: BF16 360 and FP8 720 PFLOPS sparse, FP4 720 dense, 13.4 TB and 576 TB/s of HBM3e;
// GB300: BF16 360 and FP8 720 sparse, FP4 1,080 dense, 20.7 TB and 576 TB/s). Every one has
// NVLink 5 at 1.8 TB/s per GPU (900 GB/s per direction); GB200 and GB300 share one NVLink
// switch fabric across the 72 GPUs of a rack (nvlink_domain 72). MXFP8 runs at the FP8 rate on
// the same tensor cores. SMs: 148 on B200 and GB200, 160 on Blackwell Ultra (NVIDIA's Blackwell
// Ultra technical blog). fp8_gemm_efficiency (FP8 and MXFP8 and NVFP4) is fitted per GPU on
// the systems validation cases: GB200 0.534 on G1 (Llama 3.1 405B, 256 GPUs, 843 tokens/s/GPU;
// H100's 0.569 gives 886.1, +5.1%), GB300 0.713 on G2 (1,048 tokens/s/GPU; GB200's 0.534 gives
// 840.9, -19.8%: both data sheets give the same dense FP8 peak, so GB300's measured gain is in
// what the peaks do not show). G3 (GB200, MXFP8) is a prediction. BF16 and NVLink factors:
// H100's (no measurement here); B300 takes H100's throughout.
// h800: H100's SXM die and rates with a narrower NVLink, taken as DeepEP's "~160 GB/s NVLink
// maximum bandwidth" per GPU per direction (DeepEP README, the H800 servers of its benchmarks),
// with NVLink 4's efficiency and H100's GEMM factors.
// moe_elementwise_bytes (an MoE layer's memory-bound work per routed token-expert pair and
// hidden unit, docs/workload.md) is fitted on one Qwen3-30B-A3B step per GPU generation
// (../shared/validation/moe.md and systems.md): Hopper 33.5 on E1 (BF16, EP16 over two DGX
// H100 without overlap, 24.71 s), Blackwell 8.9 on G3 (MXFP8, 8 GB200, 39,936 tokens/s/GPU).
// The kernels' traffic counted one by one (permute and unpermute, the weighted combine, the
// routed SwiGLU) is about 10: Blackwell's software stack is near it, Hopper's E1 run spends
// 3.4 times it (what it spends is not broken down in the source). A100 takes Hopper's.
// E1 with overlap and E2 (FP8) are predictions.
#include "stepsim/gpu/gpu_spec.hpp"

namespace stepsim::gpu {

const std::vector<GpuSpec>& gpu_presets() {
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  static const std::vector<GpuSpec> presets = {
      {"a100", 312e12, 0, 2.039e12, 80 * kGiB, DataRate::gbps(2'400), 0.773, 0, 8, 0.674, 0.674,
       108, 0, 0, 33.5},
      {"h100", 989e12, 1979e12, 3.35e12, 80 * kGiB, DataRate::gbps(3'600), 0.817, 0.85, 8, 0.682,
       0.569, 132, 0, 0, 33.5},
      {"h800", 989e12, 1979e12, 3.35e12, 80 * kGiB, DataRate::gbps(1'280), 0.817, 0.85, 8, 0.682,
       0.569, 132, 0, 0, 33.5},
      {"h200", 989e12, 1979e12, 4.8e12, 141 * kGiB, DataRate::gbps(3'600), 0.817, 0.85, 8, 0.682,
       0.569, 132, 0, 0, 33.5},
      {"b200", 2250e12, 4500e12, 8.0e12, 180 * kGiB, DataRate::gbps(7'200), 0.817, 0.85, 8, 0.682,
       0.569, 148, 4500e12, 9000e12, 8.9},
      {"b300", 2250e12, 4500e12, 8.0e12, 288 * kGiB, DataRate::gbps(7'200), 0.817, 0.85, 8, 0.682,
       0.569, 160, 4500e12, 13500e12, 8.9},
      {"gb200", 2500e12, 5000e12, 8.0e12, 186 * kGiB, DataRate::gbps(7'200), 0.817, 0.85, 72, 0.682,
       0.534, 148, 5000e12, 10000e12, 8.9},
      {"gb300", 2500e12, 5000e12, 8.0e12, 288 * kGiB, DataRate::gbps(7'200), 0.817, 0.85, 72, 0.682,
       0.713, 160, 5000e12, 15000e12, 8.9},
  };
  return presets;
}

double peak_flops(const GpuSpec& gpu, const std::string& precision) {
  if (precision == "fp8") return gpu.fp8_flops;
  if (precision == "mxfp8") return gpu.mxfp8_flops;
  if (precision == "nvfp4") return gpu.nvfp4_flops;
  return gpu.bf16_flops;
}

double operand_bytes(const std::string& precision) {
  if (precision == "fp8") return 1;
  if (precision == "mxfp8") return 1 + 1.0 / 32;
  if (precision == "nvfp4") return 0.5 + 1.0 / 16;
  return 2;
}

std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> names;
  for (const GpuSpec& g : gpu_presets()) names.push_back(g.name);
  return names;
}

std::string gpu_preset_list() {
  std::string list;
  for (const std::string& n : gpu_preset_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

Result<GpuSpec> gpu_preset(const std::string& name) {
  for (const GpuSpec& g : gpu_presets()) {
    if (g.name == name) return g;
  }
  return Error{"unknown GPU '" + name + "' (allowed: " + gpu_preset_list() + ")"};
}

}  // namespace stepsim::gpu
