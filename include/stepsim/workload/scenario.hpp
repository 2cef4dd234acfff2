#pragma once
/// A scenario: a model, how it is parallelized and placed, the GPU, the compute efficiencies,
/// the topology and every collective, NIC and fabric parameter, from one YAML file
/// (`workloads/*.yaml`) plus `--set key=value` overrides. One ParamTable declares every key.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/config/param_table.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/model.hpp"

namespace stepsim::workload {

/// Most GPUs a scenario may use (parallel.gpus, and tp x pp x cp x dp).
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;
/// Most forward passes of model chunks in one step (micro-batches x pp x vpp): the schedule
/// holds a few numbers for each.
inline constexpr std::int64_t kMaxPipelineOps = std::int64_t{1} << 22;

struct Parallelism {
  int tp = 1;   ///< tensor parallel, inside a server (Megatron-LM's column/row split)
  int pp = 1;   ///< pipeline stages
  int vpp = 1;  ///< virtual stages (model chunks) per GPU: the interleaved schedule if > 1
  int cp = 1;   ///< context parallel (sequence split across GPUs, ring attention)
  int ep = 1;   ///< expert parallel (MoE): experts split across this many GPUs of a stage
  /// Expert tensor parallel (MoE), a divisor of tp; 0: tp. Megatron's MoE parallel folding: the
  /// expert grid etp x ep x expert-DP folds over each stage's tp x cp x dp GPUs.
  int etp = 0;
  int dp = 0;                     ///< data parallel; 0: GPUs / (tp pp cp)
  int gpus = 0;                   ///< 0: tp pp cp dp
  std::int64_t micro_batch = 1;   ///< sequences per micro-batch
  std::int64_t global_batch = 8;  ///< sequences per step
  /// 0: DDP (all-reduce of gradients); 1, 2: distributed optimizer (reduce-scatter of
  /// gradients, all-gather of parameters after the step); 3: FSDP (parameters gathered per layer).
  int zero = 1;
  std::string recompute = "none";   ///< none, selective (attention only) or full
  bool sequence_parallel = true;    ///< TP all-reduce becomes reduce-scatter + all-gather
  std::int64_t bucket = 128 << 20;  ///< gradient bucket bytes (reduced as buckets fill)
  int grad_bytes = 2;               ///< bytes per gradient element on the wire (bf16 2, fp32 4)
  bool overlap_grad_reduce = true;  ///< reduce buckets during the last micro-batch's backward
  /// ZeRO 1/2: the parameter all-gather overlaps the next step's first forward pass.
  bool overlap_param_gather = true;
  /// Megatron-LM / Transformer Engine TP communication overlap (tp_comm_overlap, with sequence
  /// parallelism): each TP all-gather / reduce-scatter runs beside the GEMM it feeds or drains,
  /// pipelined in tp chunks (overlapped_seconds, compute_cost.hpp).
  bool tp_overlap = false;
  /// Context parallelism with a causal mask: Megatron/TE's load-balanced split (2 cp chunks,
  /// rank r holds chunks r and 2cp-1-r) gives every rank the same attention work; without it the
  /// last rank does (2cp-1)/cp of the average (cp_attention_blocks).
  bool cp_load_balance = true;
  /// Uneven pipeline layouts (Megatron-LM's --decoder-first/last-pipeline-num-layers): layers
  /// of the first and the last virtual stage; 0: the default split.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  /// Megatron-Core's --pipeline-model-parallel-layout (pipeline_layout.hpp): what each virtual
  /// stage holds, e.g. "Et*3|(tt|)*29m|L"; empty: the split above.
  std::string layout;

  [[nodiscard]] int data_parallel() const { return dp > 0 ? dp : gpus / (tp * pp * cp); }
  [[nodiscard]] int expert_tp() const { return etp > 0 ? etp : tp; }
  /// The expert data-parallel size: tp cp dp / (etp ep).
  [[nodiscard]] int expert_dp() const {
    return std::max(tp * cp * data_parallel() / std::max(expert_tp() * ep, 1), 1);
  }
  [[nodiscard]] int world() const { return gpus > 0 ? gpus : tp * pp * cp * dp; }
  /// Micro-batches per step in each pipeline.
  [[nodiscard]] std::int64_t micro_batches() const {
    return global_batch / (micro_batch * data_parallel());
  }
};

/// How fast the GPU runs the step's kernels (the roofline's efficiency factors).
struct ComputeParams {
  /// Achieved fraction of peak FLOP/s for GEMMs and attention; 0: the GPU preset's (fitted,
  /// docs/workload.md), for the model's precision.
  double gemm_efficiency = 0;
  /// tiles: each GEMM's time from its shape (tile and wave quantization over the GPU's SMs,
  /// bounded by HBM traffic); flat: every GEMM's FLOPs at the one efficiency (the old model).
  std::string gemm_model = "tiles";
  int gemm_tile_m = 256;  ///< output tile of the GEMM kernel (either orientation is tried)
  int gemm_tile_n = 128;
  /// flash: the attention core as FlashAttention runs it (key blocks of attention_block, the
  /// masked ones skipped when causal, a fixed cost per query block, backward 2.5x the forward's
  /// matmuls); formula: 4 T s h / tp FLOPs at the GEMM efficiency, backward twice (the old model).
  std::string attention = "flash";
  double attention_efficiency = 0;  ///< fraction of the BF16 peak; 0: the GEMM efficiency
  int attention_block = 128;        ///< FlashAttention's query and key block
  double memory_efficiency = 0.8;   ///< achieved fraction of HBM bandwidth, elementwise kernels
  /// HBM bytes of elementwise kernels (norms, activations, residuals, dropout) per token and
  /// per hidden unit in one layer's forward (backward: twice).
  double elementwise_bytes = 24;
  SimTime kernel_overhead = SimTime::us(5);  ///< launch and tail per layer and pass
  /// Host time to launch one kernel in eager mode (PyTorch, Megatron-Core, Transformer Engine
  /// without CUDA graphs); a layer pass takes max(its GPU time, its launches' host time). 0: the
  /// host keeps ahead of the GPU (CUDA graphs, fused grouped kernels). About 20 us per kernel
  /// on a DGX H100's host in eager mode (docs/workload.md, "host launches").
  SimTime host_launch = SimTime::zero();
  /// Kernels of a layer and micro-batch (forward and backward) besides its GEMMs, its attention
  /// core and FP8 casts: norms, RoPE, residual adds, activations, the router, permutation and
  /// the dispatcher's kernels (a third in the forward).
  double layer_kernels = 90;
  /// Optimizer: HBM bytes per parameter of the shard (Adam in fp32 with bf16 weights and
  /// gradients: read and write of master weights, two moments, gradient, weight).
  double optimizer_bytes = 36;
};

/// How the MoE layers' expert parallelism communicates (moe.*).
struct MoeParams {
  /// The dispatcher (src/workload/moe/): alltoall (NCCL's all-to-all), deepep (DeepEP's normal
  /// kernels) or deepep_ll (its low-latency kernels).
  std::string dispatcher = "alltoall";
  int max_nodes_per_token = 0;  ///< node-limited routing: servers a token may reach (0: any)
  /// none: the dispatch and combine block the compute stream; 1f1b: Megatron's EP A2A overlap
  /// (overlap_moe_expert_parallel_comm), one micro-batch's all-to-alls beside another's
  /// forward or backward in the 1F1B steady state.
  std::string overlap = "none";
  /// SMs the communication kernels hold while they run beside compute (DeepSeek-V3: 20); the
  /// compute beside them runs on the rest.
  int comm_sms = 20;
  /// An FP8 model's forward dispatch in FP8 (DeepEP's kernels as DeepSeek-V3 runs them); false:
  /// BF16 as Megatron-Core's flex dispatcher sends it (neither its HybridEP nor its DeepEP
  /// backend quantizes the dispatch; the experts' GroupedLinear quantizes after it).
  bool fp8_dispatch = true;
  /// How the routed tokens spread over the experts: balanced, zipf:ALPHA or file:PATH
  /// (src/workload/moe/routing.hpp).
  std::string routing = "balanced";
  /// No capacity: every expert takes the tokens routed to it, the busiest EP rank sets the
  /// layer's time. false: each expert's buffer holds capacity_factor x its even share (padded),
  /// the tokens over it dropped.
  bool dropless = false;
  /// file:PATH's loads by MoE layer (each sums to 1), read with the scenario; else empty.
  std::vector<std::vector<double>> expert_loads;
};

/// What the HDF5 file keeps (output.*).
struct OutputParams {
  /// /flows rows: all, sampled (every row of 1 in `flows_sample` collectives, chosen by a hash
  /// of the collective id: flow_row_sampled), none, or auto (all up to kAutoFlowRows rows, else
  /// sampled).
  std::string flows = "auto";
  int flows_sample = 16;  ///< sampled: K of "1 in K collectives"
  static constexpr std::uint64_t kAutoFlowRows = 100000;
  /// Bins of the fabric's time series in HDF5 /samples (fabric_samples.hpp); zero: none.
  SimTime sample_interval = SimTime::us(10);
};

/// The per-GPU memory model's settings (memory.*; memory_model.hpp, docs/workload.md "Memory").
/// The allowances are what frameworks hold beyond the formulas, with their sources.
struct MemoryParams {
  /// error: a layout whose peak stage exceeds gpu.hbm_bytes is a user error; warn: simulate
  /// anyway and mark the result.
  std::string check = "error";
  /// Bytes per parameter of the model states. megatron: bf16 weights, fp32 main gradients and
  /// 12 bytes of optimizer state (Megatron-LM's 18 bytes); zero: bf16 weights and gradients
  /// (ZeRO's 16 bytes).
  std::string accounting = "megatron";
  /// Dropout after attention and the MLP (and of the attention scores): their 1-byte masks are
  /// stored (Korthikanti et al.'s count); false for models trained without dropout.
  bool dropout = true;
  /// What parallel.recompute selective keeps. attention: Megatron-LM's selective recomputation
  /// (the attention core recomputed; Korthikanti et al.'s 34 sbh/t). op: torchtitan's op-level
  /// policy (the layer's input, the attention's output and every other matmul's output).
  std::string selective = "attention";
  /// fp32 copies of the logits alive in the loss's backward: 1 with a fused cross entropy
  /// (Megatron-LM's vocabulary-parallel one, Korthikanti et al.'s 4 sbv/t); 3 with PyTorch's
  /// F.cross_entropy on upcast logits (the log-softmax output, its gradient and the input's).
  int logits_copies = 1;
  /// ZeRO-3 / FSDP: layers whose parameters are gathered ahead of the one computing.
  int fsdp_prefetch = 1;
  /// CUDA context and kernels per process: 0.3-0.5 GB with lazy loading (PyTorch maintainers).
  std::int64_t cuda_context = 500'000'000;
  /// NCCL's buffer per channel and peer (NCCL_BUFFSIZE default, 4 MiB).
  std::int64_t nccl_buffer = 4 << 20;
  int nccl_channels = 0;  ///< channels per communicator; 0: coll.channels
  /// Kept free for the allocator's fragmentation and workspaces (nccl-tests keeps 1 GB free).
  std::int64_t reserve = 1'000'000'000;
};

/// One job of a multi-job scenario (`jobs:`, docs/workload.md): a model with its parallelism
/// and compute settings on its own GPUs of the shared topology. It starts from the scenario's
/// top-level model, parallel and compute keys; its GPU count sets parallel.gpus.
struct JobSpec {
  std::string name;
  std::string gpus_text;            ///< as given: "0-7", "0-3,8-11"
  std::vector<std::uint32_t> gpus;  ///< the topology's GPUs, by the job's global rank
  ModelSpec model;
  Parallelism par;
  ComputeParams compute;
};

struct Scenario {
  std::string source;  ///< the file it came from
  ModelSpec model;
  Parallelism par;
  gpu::GpuSpec gpu = gpu::gpu_preset("h100").value();
  ComputeParams compute;
  MoeParams moe;
  collective::CollectiveParams coll;
  nic::NicParams nic;
  fabric::FabricParams fabric;
  /// Path, made usable from the current directory by load_scenario: a relative one is relative to
  /// the scenario file, or to the current directory when `--set topology=` names a file there.
  std::string topology;
  /// packet (each collective at packet level), cell (the same in cells of fabric.cell_size
  /// bytes), ideal (NCCL's cost model) or analytical (alpha-beta lower bound)
  std::string fidelity = "packet";
  /// Packet fidelity: a collective runs together with its copies on the other TP (and CP)
  /// ranks, which share the NICs and the fabric with it.
  bool concurrent = true;
  /// How the step runs: "memoized" (each distinct collective alone, with its TP/CP copies, then
  /// composed per stage), "whole" (every GPU's schedule on one PDES run: all groups' traffic
  /// meets on the NICs, NVLink and fabric; packet and cell fidelity only) or "auto" (whole at
  /// packet and cell fidelity, memoized at ideal and analytical). resolved_step_mode() says
  /// which one runs; docs/workload.md.
  std::string step_mode = "auto";
  /// Whole step: "rails" runs one rail of a rail-symmetric job and copies it to the others
  /// (whole_step.hpp says when that is exact); "none" runs every GPU. The memoized step runs one
  /// pipeline and has no rails to fold: it ignores this.
  std::string step_fold = "none";
  /// Whole step: stragglers, (global GPU, compute slowdown factor >= 1) (`run --slow-gpu`).
  std::vector<std::pair<std::uint32_t, double>> slow_gpus;
  /// Whole step: background traffic on the same fabric (`run --background`): each pattern's
  /// flows write `background_message` bytes at `rate` each from time 0 until `until`.
  struct Background {
    std::string pattern = "permutation";  ///< permutation, incast, all_to_all, hotspot
    DataRate rate;                        ///< per flow
    SimTime until;                        ///< last message posted before this
  };
  std::vector<Background> background;
  std::int64_t background_message = 1 << 20;
  SimTime end = SimTime::s(3600);  ///< stop the simulated step after this
  OutputParams output;
  MemoryParams memory;
  /// Several jobs on the one topology (`jobs:`; step.mode whole only): each job's model,
  /// parallelism and GPUs. Empty: one job (model, par, compute) on the first par.world() GPUs.
  std::vector<JobSpec> jobs;
};

/// The fidelity simulates the fabric (packet or cell): the only ones the whole step runs at.
[[nodiscard]] inline bool fabric_fidelity(const Scenario& s) {
  return s.fidelity == "packet" || s.fidelity == "cell";
}

/// The step mode that runs: step.mode when it is memoized or whole, and for auto (the default)
/// whole at packet and cell fidelity, memoized at ideal and analytical. What the summary, the
/// JSON and the HDF5 file record as the run's step mode.
[[nodiscard]] inline const char* resolved_step_mode(const Scenario& s) {
  if (s.step_mode == "memoized" || s.step_mode == "whole") return s.step_mode.c_str();
  return fabric_fidelity(s) ? "whole" : "memoized";
}

/// The step runs as one simulation: the resolved step mode is whole at packet or cell fidelity
/// (validate() refuses an explicit whole at ideal or analytical fidelity).
[[nodiscard]] inline bool runs_whole_step(const Scenario& s) {
  return fabric_fidelity(s) && s.step_mode != "memoized";
}

/// Job `k` of `s` as a one-job scenario: `s` with the job's model, parallelism and compute
/// (and no `jobs`).
Scenario job_scenario(const Scenario& s, std::size_t k);

/// Every key of a scenario ("model.layers", "parallel.tp", "gpu.model", "coll.channels",
/// "transport.rto", "fabric.lb", ...), bound to `s`'s fields.
config::ParamTable scenario_param_table(Scenario& s);

/// Reads a scenario file and applies `sets` ("key=value") on top, then resolves `topology`. Errors
/// name the file, line and key (unknown keys list the known ones of the section).
Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& sets);

/// The checks that need the whole scenario and its topology: TP divides the heads and fits in
/// a server, the layers split evenly over the stages, the batch over micro-batches and data
/// parallel ranks, the GPUs exist. The error says which key and why.
Result<bool> validate(const Scenario& s, const topology::Topology& topo);

/// The part of validate() that the parallel layout plays no part in: the NIC model on the
/// topology, the switch buffer against PFC's headroom on every link.
Result<bool> validate_fabric(const Scenario& s, const topology::Topology& topo);

/// validate() of a scenario that differs from one that passed validate() on `topo` only in its
/// parallel layout (the planner's candidates): validate_fabric() is not repeated.
Result<bool> validate_layout(const Scenario& s, const topology::Topology& topo);

}  // namespace stepsim::workload
