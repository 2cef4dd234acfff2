#include "stepsim/workload/scenario.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "src/workload/moe/moe_dispatcher.hpp"
#include "src/workload/moe/routing.hpp"
#include "stepsim/config/yaml_input.hpp"
#include "stepsim/workload/pipeline_layout.hpp"

#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/nic/nic_presets.hpp"

namespace stepsim::workload {

namespace {

config::Param text(const std::string& key, std::string& field, std::string help) {
  return config::Param{key, std::move(help),
                       [&field](const std::string& t) -> Result<bool> {
                         if (t.empty()) return Error{"must not be empty"};
                         field = t;
                         return true;
                       },
                       [&field] { return field; }};
}

}  // namespace

config::ParamTable scenario_param_table(Scenario& s) {
  config::ParamTable t;
  ModelSpec& m = s.model;
  const int big = 1 << 24;
  t.add(text("model.name", m.name, "the model's name (reports)"));
  t.integer("model.layers", m.layers, 1, big, "transformer layers");
  t.integer("model.hidden", m.hidden, 1, big, "hidden size h");
  t.integer("model.heads", m.heads, 1, big, "attention heads");
  t.integer("model.kv_heads", m.kv_heads, 0, big, "key/value heads (GQA); 0 = heads");
  t.integer("model.ffn", m.ffn, 1, 1 << 30, "feed-forward inner size");
  t.integer("model.vocab", m.vocab, 1, 1 << 30, "vocabulary size");
  t.integer("model.seq_len", m.seq_len, 1, 1 << 30, "tokens per sequence");
  t.choice("model.activation", m.activation, {"gelu", "swiglu"},
           "FFN kind: gelu (2 matrices) or swiglu (3)");
  t.choice("model.precision", m.precision, {"bf16", "fp8", "mxfp8", "nvfp4"},
           "GEMM precision (mxfp8, nvfp4: Blackwell block-scaled formats)");
  t.boolean("model.tied_embeddings", m.tied_embeddings, "output layer shares the embedding");
  t.boolean("model.causal", m.causal, "causal attention (FlashAttention skips masked blocks)");
  t.integer("model.experts", m.experts, 0, 1 << 16, "MoE experts per layer (0: dense)");
  t.integer("model.top_k", m.top_k, 1, 1 << 16, "experts per token");
  t.real("model.capacity_factor", m.capacity_factor, 0.1, 100, "MoE expert capacity factor");
  t.integer("model.shared_experts", m.shared_experts, 0, 1 << 16,
            "MoE: experts (of size ffn) every token goes through");
  t.integer("model.dense_layers", m.dense_layers, 0, big, "MoE: the first layers are dense");
  t.integer("model.dense_ffn", m.dense_ffn, 0, 1 << 30,
            "MoE: the dense layers' FFN inner size; 0 = ffn");
  t.choice("model.attention", m.attention, {"mha", "mla"},
           "mha (grouped-query with kv_heads) or mla (DeepSeek's multi-head latent attention)");
  t.integer("model.q_lora_rank", m.q_lora_rank, 0, 1 << 20, "MLA: query latent; 0 = none");
  t.integer("model.kv_lora_rank", m.kv_lora_rank, 1, 1 << 20, "MLA: key/value latent");
  t.integer("model.qk_nope_dim", m.qk_nope_dim, 1, 1 << 12, "MLA: per-head dims without RoPE");
  t.integer("model.qk_rope_dim", m.qk_rope_dim, 0, 1 << 12, "MLA: per-head RoPE dims");
  t.integer("model.head_dim", m.attn_head_dim, 0, 1 << 12,
            "mha: dimensions per attention head; 0 = hidden / heads");
  t.integer("model.v_head_dim", m.v_head_dim, 1, 1 << 12, "MLA: per-head value dims");
  t.integer("model.mtp_layers", m.mtp_layers, 0, 64,
            "multi-token prediction modules on the last stage (a layer and the output layer each)");

  Parallelism& p = s.par;
  t.integer("parallel.tp", p.tp, 1, 1 << 16, "tensor parallel size (inside a server)");
  t.integer("parallel.pp", p.pp, 1, 1 << 16, "pipeline stages");
  t.integer("parallel.vpp", p.vpp, 1, 1 << 10, "virtual stages per GPU (interleaved 1F1B)");
  t.integer("parallel.cp", p.cp, 1, 1 << 16, "context parallel size");
  t.integer("parallel.ep", p.ep, 1, 1 << 16,
            "expert parallel size (a divisor of tp x cp x dp / etp: MoE parallel folding)");
  t.integer("parallel.etp", p.etp, 0, 1 << 16,
            "expert tensor parallel size, a divisor of tp; 0 = tp");
  t.choice("moe.dispatcher", s.moe.dispatcher, moe_dispatcher_names(),
           "MoE token dispatch: alltoall (NCCL), deepep (DeepEP's normal kernels: RDMA once per "
           "server, then NVLink) or deepep_ll (its low-latency kernels: pure RDMA)");
  t.integer("moe.max_nodes_per_token", s.moe.max_nodes_per_token, 0, 1 << 16,
            "node-limited routing: servers a token's experts may span (0: any)");
  t.choice("moe.overlap", s.moe.overlap, {"none", "1f1b", "dualpipe"},
           "none (the all-to-alls block compute), 1f1b (Megatron's EP overlap: one "
           "micro-batch's dispatch/combine beside another's forward/backward) or dualpipe "
           "(DeepSeek's DualPipe: two mirrored stages per GPU, fed from both ends)");
  t.integer("moe.comm_sms", s.moe.comm_sms, 0, 1024,
            "SMs the EP kernels take from the compute they overlap");
  t.boolean("moe.fp8_dispatch", s.moe.fp8_dispatch,
            "an FP8 model's forward dispatch in FP8 (DeepEP as DeepSeek-V3 runs it); false: "
            "BF16 (Megatron-Core's flex dispatcher)");
  t.add(text("moe.routing", s.moe.routing,
             "expert loads: balanced, zipf:ALPHA (the i-th expert takes i^-ALPHA of the tokens) "
             "or file:PATH (one line per MoE layer of E counts or fractions)"));
  t.boolean("moe.dropless", s.moe.dropless,
            "no expert capacity: the busiest EP rank takes what is routed to it (false: "
            "capacity_factor x the even share, padded, the rest dropped)");
  t.integer("parallel.dp", p.dp, 0, 1 << 24, "data parallel size; 0 = gpus / (tp pp cp)");
  t.integer("parallel.gpus", p.gpus, 0, 1 << 24, "GPUs; 0 = tp pp cp dp");
  t.integer("parallel.micro_batch", p.micro_batch, 1, std::int64_t{1} << 30,
            "sequences per micro-batch");
  t.integer("parallel.global_batch", p.global_batch, 1, std::int64_t{1} << 40,
            "sequences per step");
  t.integer("parallel.zero", p.zero, 0, 3,
            "0 DDP, 1-2 distributed optimizer (reduce-scatter + all-gather), 3 FSDP");
  t.choice("parallel.recompute", p.recompute, {"none", "selective", "full"},
           "activation recomputation");
  t.boolean("parallel.sequence_parallel", p.sequence_parallel,
            "TP all-reduce as reduce-scatter + all-gather");
  t.bytes("parallel.bucket", p.bucket, 1 << 10, std::int64_t{1} << 40, "gradient bucket");
  t.integer("parallel.grad_bytes", p.grad_bytes, 1, 4, "bytes per gradient on the wire");
  t.boolean("parallel.overlap_grad_reduce", p.overlap_grad_reduce,
            "reduce gradient buckets during the last backward");
  t.boolean("parallel.overlap_param_gather", p.overlap_param_gather,
            "ZeRO 1/2: parameter all-gather hidden behind the next step's first forward");
  t.boolean("parallel.tp_overlap", p.tp_overlap,
            "Megatron's TP communication overlap (with sequence_parallel): each TP all-gather / "
            "reduce-scatter runs beside its GEMM, pipelined in tp chunks");
  t.boolean("parallel.cp_load_balance", p.cp_load_balance,
            "causal context parallelism with Megatron's load-balanced split (2cp chunks)");
  t.integer("parallel.first_stage_layers", p.first_stage_layers, 0, big,
            "layers of the first virtual stage (uneven pipeline); 0 = the default split");
  t.integer("parallel.last_stage_layers", p.last_stage_layers, 0, big,
            "layers of the last virtual stage (uneven pipeline); 0 = the default split");
  t.add({"parallel.layout",
         "Megatron's pipeline layout: E embedding, t layer, m MTP, L loss, '|' between the pp x "
         "vpp virtual stages, x*N, (...)*N (e.g. Et*3|(tt|)*29m|L); empty = the split above",
         [&p](const std::string& v) -> Result<bool> {
           if (!v.empty()) {
             if (auto ok = parse_pipeline_layout(v); !ok) return ok.error();
           }
           p.layout = v;
           return true;
         },
         [&p] { return p.layout; }});

  ComputeParams& c = s.compute;
  t.real(
      "compute.gemm_efficiency", c.gemm_efficiency, 0.0, 1.0,
      "achieved fraction of peak FLOP/s of full GEMM waves (and attention); 0 = the GPU preset's");
  t.choice("compute.gemm_model", c.gemm_model, {"tiles", "flat"},
           "tiles: GEMM time from its shape (tile and wave quantization on gpu.sms, HBM bound); "
           "flat: one efficiency for every GEMM");
  t.integer("compute.gemm_tile_m", c.gemm_tile_m, 1, 1 << 12, "GEMM output tile rows (tiles)");
  t.integer("compute.gemm_tile_n", c.gemm_tile_n, 1, 1 << 12, "GEMM output tile columns (tiles)");
  t.choice("compute.attention", c.attention, {"flash", "formula"},
           "flash: FlashAttention's blocks (causal ones skipped, a fixed cost per query block, "
           "backward 2.5x); formula: 4 T s h / tp FLOPs at the GEMM efficiency");
  t.real("compute.attention_efficiency", c.attention_efficiency, 0.0, 1.0,
         "flash attention's achieved fraction of the BF16 peak; 0 = the GEMM efficiency");
  t.integer("compute.attention_block", c.attention_block, 16, 1 << 12,
            "FlashAttention query and key block (tokens)");
  t.real("compute.memory_efficiency", c.memory_efficiency, 0.01, 1.0,
         "achieved fraction of HBM bandwidth");
  t.real("compute.elementwise_bytes", c.elementwise_bytes, 0, 1e4,
         "elementwise HBM bytes per token and hidden unit per layer forward");
  t.time("compute.kernel_overhead", c.kernel_overhead, SimTime::zero(), SimTime::s(1),
         "launch overhead per layer and pass");
  t.time("compute.host_launch", c.host_launch, SimTime::zero(), SimTime::ms(1),
         "host time per kernel launch (eager mode); a layer pass takes max(GPU, launches)");
  t.real("compute.layer_kernels", c.layer_kernels, 0, 1e5,
         "kernels per layer and micro-batch besides GEMMs, attention and FP8 casts");
  t.real("compute.optimizer_bytes", c.optimizer_bytes, 0, 1e4,
         "optimizer HBM bytes per parameter of the shard");

  // The GPU: a preset, then any of its numbers. The collective layer's gpu.* keys follow it.
  t.add({"gpu.model",
         "a shipped GPU (" + gpu::gpu_preset_list() + "); keys given after it override",
         [&s](const std::string& name) -> Result<bool> {
           auto g = gpu::gpu_preset(name);
           if (!g) return g.error();
           s.gpu = *g;
           s.coll.apply_gpu(*g);
           return true;
         },
         [&s] { return s.gpu.name; }});
  t.real("gpu.bf16_flops", s.gpu.bf16_flops, 1e9, 1e18, "peak dense BF16 FLOP/s");
  t.real("gpu.fp8_flops", s.gpu.fp8_flops, 0, 1e18, "peak dense FP8 FLOP/s");
  t.real("gpu.mxfp8_flops", s.gpu.mxfp8_flops, 0, 1e18, "peak dense MXFP8 FLOP/s (0: none)");
  t.real("gpu.nvfp4_flops", s.gpu.nvfp4_flops, 0, 1e18, "peak dense NVFP4 FLOP/s (0: none)");
  t.real("gpu.hbm_bandwidth", s.gpu.hbm_bandwidth, 1e9, 1e15, "HBM bytes/s");
  t.real("gpu.gemm_efficiency", s.gpu.gemm_efficiency, 0.01, 1.0,
         "achieved fraction of the BF16 peak of a wave of full GEMM tiles (fitted per GPU)");
  t.real("gpu.fp8_gemm_efficiency", s.gpu.fp8_gemm_efficiency, 0.01, 1.0,
         "achieved fraction of the FP8 peak of a wave of full GEMM tiles (fitted per GPU)");
  t.real("gpu.moe_elementwise_bytes", s.gpu.moe_elementwise_bytes, 0, 1e4,
         "an MoE layer's memory-bound HBM bytes per routed token-expert pair and hidden unit per "
         "forward (permute, combine, routed activation, router; fitted per GPU generation)");
  t.bytes("gpu.hbm_bytes", s.gpu.hbm_bytes, 1 << 20, std::int64_t{1} << 50,
          "HBM capacity (the memory check's limit)");
  t.integer("gpu.sms", s.gpu.sms, 1, 1 << 12, "streaming multiprocessors (GEMM waves)");
  const config::ParamTable coll = collective::collective_param_table(s.coll);
  for (const config::Param& x : coll.params()) {
    if (x.key != "gpu.model") t.add(x);
  }
  const config::ParamTable nic = nic::nic_param_table(s.nic);
  for (const config::Param& x : nic.params()) t.add(x);

  const config::ParamTable fab = fabric::fabric_param_table(s.fabric);
  for (const config::Param& x : fab.params()) t.add(x);  // fabric.cell among them

  MemoryParams& mem = s.memory;
  t.choice("memory.check", mem.check, {"error", "warn"},
           "a layout whose peak GPU memory exceeds gpu.hbm_bytes: error (exit 2) or warn "
           "(simulate and mark the result)");
  t.choice("memory.accounting", mem.accounting, {"megatron", "zero"},
           "model-state bytes per parameter: megatron (bf16 weights, fp32 main gradients, 12 B "
           "optimizer: 18) or zero (bf16 weights and gradients, 12 B optimizer: 16)");
  t.boolean("memory.dropout", mem.dropout, "dropout masks stored for the backward");
  t.choice("memory.selective", mem.selective, {"attention", "op"},
           "what parallel.recompute selective keeps: attention (Megatron: the attention core "
           "recomputed) or op (torchtitan: the layer input, attention output and every other "
           "matmul output)");
  t.integer("memory.logits_copies", mem.logits_copies, 1, 8,
            "fp32 logits copies alive in the loss backward (1 fused cross entropy, 3 PyTorch's)");
  t.integer("memory.fsdp_prefetch", mem.fsdp_prefetch, 0, 8,
            "ZeRO-3: layers gathered ahead of the computing one");
  t.bytes("memory.cuda_context", mem.cuda_context, 0, std::int64_t{1} << 40,
          "CUDA context and kernels per GPU");
  t.bytes("memory.nccl_buffer", mem.nccl_buffer, 0, std::int64_t{1} << 34,
          "NCCL buffer per channel and peer (NCCL_BUFFSIZE)");
  t.integer("memory.nccl_channels", mem.nccl_channels, 0, 1 << 10,
            "NCCL channels per communicator; 0 = coll.channels");
  t.bytes("memory.reserve", mem.reserve, 0, std::int64_t{1} << 40,
          "kept free per GPU (allocator fragmentation, workspaces)");

  t.add(text("topology", s.topology,
             "topology file (relative to the scenario file; with --set, to the current "
             "directory when it exists there)"));
  t.choice("fidelity", s.fidelity, {"packet", "cell", "ideal", "analytical"},
           "packet: every collective at packet level; cell: the same fabric in cells of "
           "fabric.cell bytes; ideal: NCCL's cost model, no fabric; analytical: alpha-beta lower "
           "bound, in bulk");
  t.boolean("concurrent", s.concurrent,
            "packet and cell fidelity: each collective runs with its copies on the other TP/CP "
            "ranks");
  t.choice("step.mode", s.step_mode, {"auto", "whole", "memoized"},
           "auto: whole at packet and cell fidelity, memoized at ideal and analytical; whole "
           "(packet and cell fidelity): every GPU's schedule in one simulation, all traffic on "
           "one fabric; memoized: each distinct collective alone, composed per stage over one "
           "pipeline (faster, no contention between groups)");
  t.choice("step.fold", s.step_fold, {"none", "rails"},
           "the whole step: none (every GPU runs) or rails (a job whose every network "
           "collective stays on one rail of a rail-optimized fabric's separate planes runs "
           "rail 0 only; the other rails copy its clocks); the memoized step ignores it");
  t.time("end", s.end, SimTime::us(1), SimTime::s(1e6), "stop the simulated step after this");
  t.choice("output.flows", s.output.flows, {"auto", "all", "sampled", "none"},
           "HDF5 /flows rows: all, sampled (every flow of 1 in output.flows_sample collectives, "
           "by a hash of the collective id), none; auto: all up to 100000 rows, else sampled");
  t.integer("output.flows_sample", s.output.flows_sample, 1, 1 << 20,
            "output.flows sampled: keep the flows of 1 in this many collectives");
  t.add({"output.sample_interval",
         "simulated time per bin of the fabric's time series (HDF5 /samples, written by "
         "step.mode whole), " +
             to_string(fabric::kMinSampleInterval) + ".." + to_string(fabric::kMaxSampleInterval) +
             "; 0 or off: none",
         [&s](const std::string& text) -> Result<bool> {
           auto v = fabric::parse_sample_interval(text);
           if (!v) return v.error();
           s.output.sample_interval = *v;
           return true;
         },
         [&s] {
           return s.output.sample_interval == SimTime::zero() ? std::string("off")
                                                              : to_string(s.output.sample_interval);
         }});
  return t;
}

namespace {

// A range of GPUs [lo, hi] of job `job` (overlap checks).
struct GpuRange {
  std::int64_t lo = 0, hi = 0;
  std::size_t job = 0;
};

// "0-7,16-23" (inclusive ranges, or single GPUs) into GPU indices, in that order; the ranges
// are added to `ranges`.
Result<std::vector<std::uint32_t>> parse_gpu_ranges(const std::string& text, std::size_t job,
                                                    std::vector<GpuRange>& ranges) {
  const Error bad{"'" + text + "' is not a list of GPU ranges (e.g. 0-63 or 0-7,16-23)"};
  std::vector<std::uint32_t> gpus;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const std::string a = item.substr(0, dash);
    const std::string b = dash == std::string::npos ? a : item.substr(dash + 1);
    auto number = [](const std::string& t) -> std::int64_t {
      if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
        return -1;
      }
      return std::stoll(t);
    };
    const std::int64_t lo = number(a);
    const std::int64_t hi = number(b);
    if (lo < 0 || hi < lo || hi - lo >= kMaxGpus ||
        static_cast<std::int64_t>(gpus.size()) + (hi - lo + 1) > kMaxGpus) {
      return bad;
    }
    for (std::int64_t g = lo; g <= hi; ++g) gpus.push_back(static_cast<std::uint32_t>(g));
    ranges.push_back(GpuRange{lo, hi, job});
    pos = comma + 1;
  }
  return gpus;
}

// The keys a job takes: name, gpus, and the scenario's model.*, parallel.* and compute.* keys
// (as "jobs[K].model.layers", ...), bound to `job` and `gpus_text`.
// An empty prefix gives the bare keys ("model.layers"): --set jobs.NAME.KEY.
config::ParamTable job_param_table(Scenario& job, std::string& name, std::string& gpus_text,
                                   const std::string& prefix) {
  auto full = [&prefix](const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  };
  config::ParamTable t;
  t.add(text(full("name"), name, "the job's name (reports)"));
  t.add(text(full("gpus"), gpus_text,
             "the job's GPUs of the topology, whole servers: ranges such as 0-63 or 0-7,16-23"));
  const config::ParamTable all = scenario_param_table(job);
  for (config::Param p : all.params()) {
    if (p.key.starts_with("model.") || p.key.starts_with("parallel.") ||
        p.key.starts_with("compute.")) {
      p.key = full(p.key);
      t.add(std::move(p));
    }
  }
  return t;
}

// A `--set jobs.NAME.KEY=VALUE` (or jobs.K.KEY, jobs[K].KEY): the job it addresses (by its
// index in `jobs:`), the address as typed ("jobs.b") and the job's own key ("parallel.dp").
struct JobSet {
  std::size_t job = 0;
  std::string address;
  std::string key;
  std::string value;
};

bool is_job_set(const std::string& kv) {
  const std::string key = kv.substr(0, kv.find('='));
  return key == "jobs" || key.starts_with("jobs.") || key.starts_with("jobs[");
}

// Each job's name before any --set: its `name`, else jobK.
std::vector<std::string> job_names(const YAML::Node& list) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const YAML::Node& entry = list[k];
    const YAML::Node name = entry.IsMap() ? entry["name"] : YAML::Node();
    names.push_back(name && name.IsScalar() ? name.Scalar() : "job" + std::to_string(k));
  }
  return names;
}

std::optional<std::size_t> job_index(const std::string& text, std::size_t jobs) {
  if (text.empty() || text.size() > 6 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const auto k = static_cast<std::size_t>(std::stoul(text));
  if (k >= jobs) return std::nullopt;
  return k;
}

// Which job `kv` addresses: a name of `names` (the longest that matches, so names may hold
// dots), else an index.
Result<JobSet> resolve_job_set(const std::string& kv, const std::vector<std::string>& names) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) return Error{"--set '" + kv + "' is not key=value"};
  const std::string key = kv.substr(0, eq);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  const std::string form = "jobs.NAME.KEY=VALUE (jobs: " + list + "; or jobs.K.KEY by index, 0.." +
                           std::to_string(names.size() - 1) + ")";
  JobSet js;
  js.value = kv.substr(eq + 1);
  std::string rest;  // after the job's address and its dot
  bool found = false;
  if (key.starts_with("jobs[")) {
    const auto close = key.find(']');
    const auto k = close == std::string::npos ? std::nullopt
                                              : job_index(key.substr(5, close - 5), names.size());
    if (k && close + 1 < key.size() && key[close + 1] == '.') {
      js.job = *k;
      js.address = key.substr(0, close + 1);
      rest = key.substr(close + 2);
      found = true;
    }
  } else if (key.starts_with("jobs.")) {
    const std::string after = key.substr(5);
    std::size_t best = 0;
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::string& n = names[k];
      if (after.starts_with(n + ".") && (!found || n.size() > best)) {
        js.job = k;
        best = n.size();
        found = true;
      }
    }
    if (!found) {
      if (auto k = job_index(after.substr(0, after.find('.')), names.size());
          k && after.find('.') != std::string::npos) {
        js.job = *k;
        best = after.find('.');
        found = true;
      }
    }
    if (found) {
      js.address = key.substr(0, 5 + best);
      rest = after.substr(best + 1);
    }
  }
  if (!found) {
    const std::string after = key.starts_with("jobs.") ? key.substr(5) : "";
    const std::string who = after.substr(0, after.find('.'));
    if (who.empty() || std::find(names.begin(), names.end(), after) != names.end()) {
      return Error{"--set " + key + ": expected " + form};
    }
    return Error{"--set " + key + ": no job '" + who + "' (jobs: " + list + "; or by index, 0.." +
                 std::to_string(names.size() - 1) + ")"};
  }
  if (rest.empty()) return Error{"--set " + key + ": expected " + form};
  js.key = rest;
  return js;
}

Result<std::vector<JobSet>> resolve_job_sets(const std::vector<std::string>& sets,
                                             const std::vector<std::string>& names) {
  std::vector<JobSet> out;
  for (const std::string& kv : sets) {
    auto js = resolve_job_set(kv, names);
    if (!js) return js.error();
    out.push_back(std::move(js).value());
  }
  return out;
}

// Applies the job's --set assignments to the job bound to `own` (a table of bare job keys);
// returns the --set key that gave its gpus ("jobs.b.gpus"), or "".
Result<std::string> apply_job_sets(const config::ParamTable& own, const std::vector<JobSet>& sets,
                                   std::size_t job) {
  std::string gpus_from;
  for (const JobSet& js : sets) {
    if (js.job != job) continue;
    const std::string section = js.key.substr(0, js.key.find('.'));
    if (section != "name" && section != "gpus" && section != "model" && section != "parallel" &&
        section != "compute") {
      return Error{"--set " + js.address + "." + js.key +
                   ": not a job key (allowed: name, gpus, model.*, parallel.*, compute.*; every "
                   "other key is the scenario's, shared by all jobs: --set " +
                   js.key + "=VALUE)"};
    }
    if (auto ok = own.set(js.key, js.value); !ok) {
      return Error{"--set " + js.address + "." + ok.error().message};
    }
    if (js.key == "gpus") gpus_from = js.address + ".gpus";
  }
  return gpus_from;
}

// The `jobs:` list of scenario file `path` into s.jobs; each job starts from `s`'s model,
// parallel and compute keys (with --set applied), parallel.dp and .gpus from its GPUs.
// `sets`: the --set assignments of jobs' keys (is_job_set), applied after each job's own keys.
Result<bool> load_jobs(const YAML::Node& list, const std::string& path,
                       const std::vector<std::string>& sets, Scenario& s) {
  auto line = [&](const YAML::Node& n) {
    return path + ":" + std::to_string(n.Mark().line + 1) + ": ";
  };
  if (!list.IsSequence() || list.size() == 0) {
    return Error{line(list) +
                 "jobs: expected a list of jobs (each a map of name, gpus, model, "
                 "parallel, compute)"};
  }
  auto job_sets = resolve_job_sets(sets, job_names(list));
  if (!job_sets) return job_sets.error();
  std::vector<GpuRange> ranges;  // every job's
  for (std::size_t k = 0; k < list.size(); ++k) {
    const YAML::Node& entry = list[k];
    const std::string key = "jobs[" + std::to_string(k) + "]";
    if (!entry.IsMap()) {
      return Error{line(entry) + key + ": expected a map (name, gpus, model, parallel, compute)"};
    }
    for (const auto& kv : entry) {
      const std::string k1 = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      if (k1 != "name" && k1 != "gpus" && k1 != "model" && k1 != "parallel" && k1 != "compute") {
        return Error{line(kv.first) + key + "." + k1 +
                     ": not a job key (allowed: name, gpus, model, parallel, compute; the GPU, "
                     "collective, NIC and fabric keys are the scenario's, shared by all jobs)"};
      }
    }
    Scenario job = s;
    job.par.dp = 0;
    job.par.gpus = 0;
    std::string name = "job" + std::to_string(k);
    std::string gpus_text;
    const config::ParamTable t = job_param_table(job, name, gpus_text, key);
    if (auto ok = t.load_yaml_map(entry, key, path); !ok) return ok.error();
    const config::ParamTable own = job_param_table(job, name, gpus_text, "");
    auto gpus_from = apply_job_sets(own, *job_sets, k);
    if (!gpus_from) return gpus_from.error();
    if (gpus_text.empty()) {
      return Error{line(entry) + key +
                   ".gpus: missing (the job's GPUs of the topology, e.g. "
                   "0-63 or 0-7,16-23)"};
    }
    auto gpus = parse_gpu_ranges(gpus_text, k, ranges);
    if (!gpus) {
      return Error{
          (gpus_from->empty() ? line(entry) + key + ".gpus: " : "--set " + *gpus_from + ": ") +
          gpus.error().message};
    }
    for (const JobSpec& other : s.jobs) {
      if (other.name == name) return Error{line(entry) + key + ".name: '" + name + "' is taken"};
    }
    const auto n = static_cast<int>(gpus->size());
    if (job.par.gpus != 0 && job.par.gpus != n) {
      return Error{line(entry) + key + ".parallel.gpus (" + std::to_string(job.par.gpus) +
                   ") must equal the " + std::to_string(n) + " GPUs of " + key + ".gpus"};
    }
    job.par.gpus = n;
    s.jobs.push_back(
        JobSpec{name, gpus_text, std::move(gpus).value(), job.model, job.par, job.compute});
  }
  // Disjoint GPUs: sorted by start, a range overlaps one before it when it starts at or before
  // the furthest end so far.
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const GpuRange& a, const GpuRange& b) { return a.lo < b.lo; });
  for (std::size_t i = 1, far = 0; i < ranges.size(); ++i) {
    const GpuRange& a = ranges[far];
    const GpuRange& b = ranges[i];
    if (b.lo <= a.hi) {
      const std::size_t later = std::max(a.job, b.job);
      const std::size_t earlier = std::min(a.job, b.job);
      const std::string key = "jobs[" + std::to_string(later) + "]";
      return Error{line(list[later]) + key + ".gpus (" + s.jobs[later].gpus_text + ") overlaps " +
                   (later == earlier ? std::string("itself")
                                     : "jobs[" + std::to_string(earlier) + "].gpus") +
                   " at GPU " + std::to_string(b.lo) + " (jobs take disjoint GPUs)"};
    }
    if (b.hi > a.hi) far = i;
  }
  return true;
}

}  // namespace

Scenario job_scenario(const Scenario& s, std::size_t k) {
  Scenario j = s;
  j.model = s.jobs[k].model;
  j.par = s.jobs[k].par;
  j.compute = s.jobs[k].compute;
  j.jobs.clear();
  return j;
}

Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  Scenario s;
  s.source = path;
  {
    const config::ParamTable t = scenario_param_table(s);
    auto text = config::read_input_file(path, "scenario file");
    if (!text) return text.error();
    auto root = config::parse_yaml_document(*text, path);
    if (!root) return root.error();
    YAML::Node doc = std::move(root).value();  // (a handle on the parsed document)
    YAML::Node jobs;
    bool has_jobs = false;
    if (!doc.IsNull()) {
      if (!doc.IsMap()) return Error{path + ": expected a map of sections"};
      const YAML::Node& map = doc;
      if (map["jobs"]) {  // (const: a lookup that does not add the key)
        jobs = map["jobs"];
        has_jobs = true;
        doc.remove("jobs");
      }
      if (auto ok = t.load_yaml_map(doc, "", path); !ok) return ok.error();
    }
    std::vector<std::string> job_sets;  // jobs.NAME.KEY=VALUE: after the jobs' own keys
    for (const std::string& kv : sets) {
      if (is_job_set(kv)) {
        job_sets.push_back(kv);
      } else if (auto ok = t.apply(kv); !ok) {
        return Error{"--set " + ok.error().message};
      }
    }
    if (has_jobs) {
      if (auto ok = load_jobs(jobs, path, job_sets, s); !ok) return ok.error();
    } else if (!job_sets.empty()) {
      const std::string& kv = job_sets.front();
      return Error{"--set " + kv.substr(0, kv.find('=')) + ": " + path +
                   " lists no jobs (a job's keys, jobs.NAME.KEY=VALUE, need a scenario with "
                   "jobs:)"};
    }
  }
  if (s.topology.empty()) return Error{path + ": topology: missing (a topology file)"};
  // A relative topology is relative to the scenario file, except one given with --set that
  // exists from the current directory (what a user typing a path on the command line means).
  const std::filesystem::path topo(s.topology);
  const bool from_command_line = std::any_of(
      sets.begin(), sets.end(), [](const std::string& kv) { return kv.starts_with("topology="); });
  if (topo.is_relative() && !(from_command_line && std::filesystem::is_regular_file(topo))) {
    s.topology = (std::filesystem::path(path).parent_path() / topo).lexically_normal().string();
  }
  auto loads = read_routing(s.moe.routing, s.model.experts,
                            std::max(s.model.layers - s.model.dense_layers, 1),
                            std::filesystem::path(path).parent_path().string());
  if (!loads) return Error{path + ": " + loads.error().message};
  s.moe.expert_loads = std::move(loads).value();
  // The ep_* collectives route as the model does.
  s.coll.ep_experts = s.model.experts;
  s.coll.ep_top_k = s.model.top_k;
  s.coll.ep_max_nodes = s.moe.max_nodes_per_token;
  if (auto ok = s.coll.validate(); !ok) return ok.error();
  if (auto ok = s.nic.validate(); !ok) return ok.error();
  fabric::FabricParams run_fabric = s.fabric;  // as the run builds it
  if (s.fidelity == "cell") run_fabric.use_cells();
  if (auto ok = run_fabric.validate(); !ok) return ok.error();
  return s;
}

}  // namespace stepsim::workload
