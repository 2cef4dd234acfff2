// validate() (see scenario.hpp): the checks that need the whole scenario and its topology.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "src/workload/expert_grid.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/nic/nic_presets.hpp"
#include "stepsim/workload/pipeline_layout.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

// Megatron's MoE parallel folding: the expert grid etp x ep x expert-DP over each stage's
// tp x cp x dp GPUs (expert-TP fastest, then EP), so that etp divides tp and etp x ep divides
// tp x cp x dp; the EP group (ep x etp / tp rows of the attention grid's tp, when it spans
// them) must cover whole CP rows or a part of one, so that every GPU's copy is the same shape.
Result<bool> validate_expert_grid(const ModelSpec& m, const Parallelism& p) {
  if (m.experts == 0) return true;
  const int etp = p.expert_tp();
  const int stage = p.tp * p.cp * p.data_parallel();
  if (m.experts % p.ep != 0) return Error{"parallel.ep must divide model.experts"};
  if (p.tp % etp != 0) {
    return Error{"parallel.etp (" + std::to_string(etp) + ") must divide parallel.tp (" +
                 std::to_string(p.tp) + ")"};
  }
  if (stage % (etp * p.ep) != 0) {
    return Error{"parallel.etp x parallel.ep (" + std::to_string(etp) + " x " +
                 std::to_string(p.ep) + " = " + std::to_string(etp * p.ep) +
                 ") must divide parallel.tp x parallel.cp x the data parallel size (" +
                 std::to_string(p.tp) + " x " + std::to_string(p.cp) + " x " +
                 std::to_string(p.data_parallel()) + " = " + std::to_string(stage) +
                 "): the expert grid (expert-TP x EP x expert-DP) folds over the attention grid"};
  }
  if (etp > 1 && etp * p.ep < p.tp) {
    return Error{"parallel.etp x parallel.ep (" + std::to_string(etp * p.ep) +
                 ") below parallel.tp needs parallel.etp 1"};
  }
  const int rows = etp * p.ep / p.tp;  // CP x DP positions the EP group spans
  if (rows > 1 && rows % p.cp != 0 && p.cp % rows != 0) {
    return Error{"parallel.ep: an EP group spans " + std::to_string(rows) +
                 " context-parallel positions, neither a divisor nor a multiple of parallel.cp (" +
                 std::to_string(p.cp) + ")"};
  }
  return true;
}

namespace {

// The model's own shape.
Result<bool> validate_model(const Scenario& s, const topology::Topology& /*topo*/,
                            const std::string& where) {
  const ModelSpec& m = s.model;
  auto bad = [&](const std::string& msg) { return Error{where + msg}; };
  if (m.attn_head_dim == 0 && m.hidden % m.heads != 0) {
    return bad("model.heads must divide model.hidden (or give model.head_dim)");
  }
  if (m.heads % m.kv() != 0) return bad("model.kv_heads must divide model.heads");
  if (m.experts > 0 && m.top_k > m.experts) return bad("model.top_k exceeds model.experts");
  if (m.experts == 0 && (m.shared_experts > 0 || m.dense_layers > 0 || m.dense_ffn > 0)) {
    return bad(
        "model.shared_experts, model.dense_layers and model.dense_ffn need an MoE model "
        "(model.experts > 0)");
  }
  if (m.dense_layers > m.layers) return bad("model.dense_layers exceeds model.layers");
  return true;
}

// The parallel sizes and their products.
Result<bool> validate_sizes(const Scenario& s, const topology::Topology& /*topo*/,
                            const std::string& where) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  auto bad = [&](const std::string& msg) { return Error{where + msg}; };
  if (p.dp == 0 && p.gpus == 0) return bad("parallel: give parallel.dp or parallel.gpus");
  // Products of the parallel sizes in 64 bits: each size is range-checked alone, their product
  // (and everything computed from it in int) must stay within the GPU bound.
  const std::int64_t model_par = std::int64_t{p.tp} * p.pp * p.cp;
  if (model_par > kMaxGpus || std::int64_t{p.dp} * model_par > kMaxGpus) {
    return bad("parallel: tp x pp x cp" + std::string(p.dp > 0 ? " x dp" : "") + " = " +
               std::to_string(model_par * std::max(1, p.dp)) + " GPUs, more than " +
               std::to_string(kMaxGpus) + " (allowed: up to " + std::to_string(kMaxGpus) + ")");
  }
  if (p.gpus > 0 && p.gpus % (p.tp * p.pp * p.cp) != 0) {
    return bad("parallel.gpus (" + std::to_string(p.gpus) +
               ") must be a multiple of tp x pp x cp (" + std::to_string(p.tp * p.pp * p.cp) + ")");
  }
  if (p.gpus > 0 && p.dp > 0 && p.gpus != p.tp * p.pp * p.cp * p.dp) {
    return bad("parallel.gpus must equal tp x pp x cp x dp");
  }
  if (m.heads % p.tp != 0) {
    return bad("parallel.tp (" + std::to_string(p.tp) + ") must divide model.heads (" +
               std::to_string(m.heads) + ")");
  }
  return true;
}

// The layers over the pipeline's virtual stages.
Result<bool> validate_layers(const Scenario& s, const topology::Topology& /*topo*/,
                             const std::string& where) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  auto bad = [&](const std::string& msg) { return Error{where + msg}; };
  const int pv = p.pp * p.vpp;
  if (!p.layout.empty()) {
    if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
      return bad(
          "parallel.layout replaces parallel.first_stage_layers and parallel.last_stage_layers: "
          "give one or the other");
    }
    auto v = parse_pipeline_layout(p.layout);
    if (!v) return bad("parallel.layout: " + v.error().message);
    if (auto ok = check_pipeline_layout(p.layout, *v, p.pp, p.vpp, m.layers, m.mtp_layers); !ok) {
      return bad("parallel.layout " + ok.error().message);
    }
  } else if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int fixed = (p.first_stage_layers > 0 ? 1 : 0) + (p.last_stage_layers > 0 ? 1 : 0);
    const int rest = m.layers - p.first_stage_layers - p.last_stage_layers;
    if (pv <= fixed || rest < pv - fixed || rest % (pv - fixed) != 0) {
      return bad("parallel.first_stage_layers (" + std::to_string(p.first_stage_layers) +
                 ") and parallel.last_stage_layers (" + std::to_string(p.last_stage_layers) +
                 ") must leave model.layers (" + std::to_string(m.layers) +
                 ") a positive multiple of the other " + std::to_string(pv - fixed) +
                 " virtual stages (parallel.pp x parallel.vpp)");
    }
  } else if (m.layers < pv || pv * ((m.layers + pv - 1) / pv) - m.layers > 2) {
    return bad("model.layers (" + std::to_string(m.layers) +
               ") must split over parallel.pp x parallel.vpp (" + std::to_string(pv) +
               ") virtual stages evenly, or with the first and last one layer short");
  }
  return true;
}

// moe.overlap dualpipe: deepseek-ai/DualPipe's rules (an even number of ranks, micro-batches
// even and at least twice the ranks, half fed from each end) and what this model of it leaves
// out.
template <typename Bad>
Result<bool> validate_dualpipe(const Scenario& s, const Bad& bad) {
  const Parallelism& p = s.par;
  const std::string key = "moe.overlap dualpipe";
  if (p.pp < 2 || p.pp % 2 != 0) {
    return bad(key + " needs parallel.pp even and at least 2 (each GPU holds stage i and stage " +
               "pp - 1 - i; this run: parallel.pp " + std::to_string(p.pp) + ")");
  }
  if (p.vpp != 1) {
    return bad(key + " needs parallel.vpp 1 (its two mirrored stages per GPU are the chunks)");
  }
  const std::int64_t mbs = p.micro_batches();
  if (mbs % 2 != 0 || mbs < 2 * std::int64_t{p.pp}) {
    return bad(key +
               " needs micro-batches per step (parallel.global_batch / (micro_batch x dp) "
               "= " +
               std::to_string(mbs) + ") even and at least 2 x parallel.pp (" +
               std::to_string(2 * p.pp) + "): half enter at each end of the pipeline");
  }
  if (s.model.mtp_layers > 0) return bad(key + " needs model.mtp_layers 0 (not modelled)");
  if (p.zero == 3) return bad(key + " needs parallel.zero below 3 (FSDP is not modelled with it)");
  return true;
}

// Sequence, batch and micro-batch rules.
Result<bool> validate_batch(const Scenario& s, const topology::Topology& /*topo*/,
                            const std::string& where) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  auto bad = [&](const std::string& msg) { return Error{where + msg}; };
  if (m.seq_len % p.cp != 0) return bad("parallel.cp must divide model.seq_len");
  if (p.tp_overlap && !p.sequence_parallel && p.tp > 1) {
    return bad(
        "parallel.tp_overlap needs parallel.sequence_parallel: true (Megatron overlaps "
        "its all-gathers and reduce-scatters)");
  }
  const int dp = p.data_parallel();
  if (dp < 1) return bad("parallel.gpus must be at least tp x pp x cp");
  if (p.global_batch % (p.micro_batch * dp) != 0) {
    return bad("parallel.global_batch (" + std::to_string(p.global_batch) +
               ") must be a multiple of micro_batch x dp (" + std::to_string(p.micro_batch * dp) +
               ")");
  }
  // Micro-batches x pp x vpp, saturated (global_batch alone may be 2^40).
  const std::int64_t mbs = p.micro_batches();
  const std::int64_t stages = std::int64_t{p.pp} * p.vpp;
  if (mbs > kMaxPipelineOps / stages) {
    return bad("parallel.global_batch (" + std::to_string(p.global_batch) + ") gives " +
               std::to_string(mbs) + " micro-batches per step; with pp x vpp = " +
               std::to_string(stages) + " that is more than " + std::to_string(kMaxPipelineOps) +
               " pipeline passes (allowed: global_batch up to micro_batch x dp x " +
               std::to_string(kMaxPipelineOps / stages) + ")");
  }
  if (p.vpp > 1 && p.micro_batches() % p.pp != 0) {
    return bad("the interleaved schedule (parallel.vpp > 1) needs micro-batches per step (" +
               std::to_string(p.micro_batches()) + ") to be a multiple of parallel.pp");
  }
  if (s.moe.overlap == "dualpipe") return validate_dualpipe(s, bad);
  return true;
}

// Experts, precision, and the fit on the topology.
Result<bool> validate_fit(const Scenario& s, const topology::Topology& topo,
                          const std::string& where) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  auto bad = [&](const std::string& msg) { return Error{where + msg}; };
  if (auto ok = validate_expert_grid(m, p); !ok) return bad(ok.error().message);
  if (m.experts == 0 && p.ep > 1) return bad("parallel.ep > 1 needs an MoE model");
  if (!s.moe.expert_loads.empty() &&
      static_cast<int>(s.moe.expert_loads.front().size()) != m.experts) {
    return bad("moe.routing: the file's loads are for " +
               std::to_string(s.moe.expert_loads.front().size()) + " experts, model.experts is " +
               std::to_string(m.experts));
  }
  if (s.moe.overlap != "none" && runs_whole_step(s) &&
      (p.zero == 3 || p.recompute == "full" ||
       (p.pp > 1 && p.vpp == 1 && s.moe.overlap != "dualpipe"))) {
    return bad("moe.overlap " + s.moe.overlap +
               " with step.mode whole pairs the passes layer by layer as Megatron-Core does: it "
               "needs parallel.zero below 3, parallel.recompute none or selective, and "
               "parallel.vpp > 1 when parallel.pp > 1 (Megatron's rule; dualpipe pairs its own two "
               "chunks; or step.mode memoized)");
  }
  if (gpu::peak_flops(s.gpu, m.precision) <= 0) {
    std::string allowed;
    for (const char* x : gpu::kPrecisions) {
      if (gpu::peak_flops(s.gpu, x) > 0) allowed += (allowed.empty() ? "" : ", ") + std::string(x);
    }
    return bad("model.precision " + m.precision + ": " + s.gpu.name + " has no " + m.precision +
               " peak (allowed on it: " + allowed + ")");
  }
  std::uint32_t per_server = 0;
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (topo.is_server(v)) per_server = std::max(per_server, topo.nodes[v].gpus);
  }
  if (static_cast<std::size_t>(p.world()) > topo.gpu_count()) {
    return bad("parallel: " + std::to_string(p.world()) + " GPUs, but " + s.topology + " has " +
               std::to_string(topo.gpu_count()));
  }
  if (static_cast<std::uint32_t>(p.tp) > per_server || per_server % p.tp != 0) {
    return bad("parallel.tp (" + std::to_string(p.tp) + ") must divide the " +
               std::to_string(per_server) + " GPUs of a server (TP stays on NVLink)");
  }
  return true;
}

// The NIC and the switches on the topology (the parallel layout plays no part).
Result<bool> validate_fabric(const Scenario& s, const topology::Topology& topo,
                             const std::string& where) {
  if (auto ok = nic::check_nic_model(s.nic.model, topo); !ok)
    return Error{where + ok.error().message};
  if (auto ok = fabric::check_switch_buffer(s.fabric, topo); !ok) {
    return Error{where + ok.error().message};
  }
  return true;
}

// validate() of one job; errors start with `where`. `fabric`: validate_fabric too.
Result<bool> validate_job(const Scenario& s, const topology::Topology& topo,
                          const std::string& where, bool fabric = true) {
  for (auto* check :
       {validate_model, validate_sizes, validate_layers, validate_batch, validate_fit}) {
    if (auto ok = check(s, topo, where); !ok) return ok;
  }
  if (fabric) return validate_fabric(s, topo, where);
  return true;
}

// A job's GPUs server by server, each server's in increasing order: the job's ranks of one
// server are then its consecutive ranks, so its TP (and CP) groups, the fastest in rank order,
// stay on one server as NVLink and the communicators need (their server may come in any order).
Result<bool> check_server_order(const std::string& key, const JobSpec& j,
                                const std::vector<std::uint32_t>& server_of) {
  std::set<std::uint32_t> done;  // servers whose GPUs the list has left
  for (std::size_t i = 1; i < j.gpus.size(); ++i) {
    const std::uint32_t a = j.gpus[i - 1], b = j.gpus[i];
    const bool same = server_of[a] == server_of[b];
    if (!same) done.insert(server_of[a]);
    if ((same && b < a) || done.count(server_of[b]) > 0) {
      return Error{key + ".gpus (" + j.gpus_text + "): GPU " + std::to_string(b) +
                   " comes after GPU " + std::to_string(a) +
                   ": list a job's GPUs server by server, each server's in increasing order "
                   "(its TP and CP groups are consecutive ranks and must stay on one server; "
                   "e.g. 8-15,0-7)"};
    }
  }
  return true;
}

}  // namespace

Result<bool> validate_fabric(const Scenario& s, const topology::Topology& topo) {
  return validate_fabric(s, topo, s.source + ": ");
}

Result<bool> validate_layout(const Scenario& s, const topology::Topology& topo) {
  if (!s.jobs.empty()) return validate(s, topo);
  return validate_job(s, topo, s.source + ": ", false);
}

Result<bool> validate(const Scenario& s, const topology::Topology& topo) {
  // The whole step is one packet- or cell-level simulation: at ideal or analytical fidelity
  // every collective is a formula and there is nothing for it to run (the memoized mode would
  // run silently instead).
  // (step.fold needs no check here: the memoized step runs one pipeline and ignores it.)
  if (s.step_mode == "whole" && !runs_whole_step(s)) {
    return Error{s.source +
                 ": step.mode whole needs packet or cell fidelity (this run: "
                 "fidelity " +
                 s.fidelity +
                 "); at ideal or analytical fidelity use step.mode "
                 "memoized or auto (the default), or add --fidelity cell"};
  }
  if (s.jobs.empty()) return validate_job(s, topo, s.source + ": ");
  if (!runs_whole_step(s)) {
    return Error{s.source +
                 ": jobs: several jobs share the fabric only in the whole step, at "
                 "packet or cell fidelity (this run: step.mode " +
                 s.step_mode + ", fidelity " + s.fidelity +
                 "; use step.mode auto or whole, and --fidelity cell or packet)"};
  }
  // The server of each GPU (the topology's GPUs are numbered server by server).
  std::vector<std::uint32_t> server_of;
  std::vector<std::uint32_t> server_gpus;
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v) || topo.nodes[v].gpus == 0) continue;
    server_of.insert(server_of.end(), topo.nodes[v].gpus,
                     static_cast<std::uint32_t>(server_gpus.size()));
    server_gpus.push_back(topo.nodes[v].gpus);
  }
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    const JobSpec& j = s.jobs[k];
    const std::string key = "jobs[" + std::to_string(k) + "]";
    const std::string where = s.source + ": " + key + " (" + j.name + "): ";
    std::map<std::uint32_t, std::uint32_t> per_server;  // server -> the job's GPUs on it
    for (std::uint32_t g : j.gpus) {
      if (g >= server_of.size()) {
        return Error{s.source + ": " + key + ".gpus (" + j.gpus_text + "): GPU " +
                     std::to_string(g) + " is beyond " + s.topology + " (GPUs 0.." +
                     std::to_string(server_of.size() - 1) + ")"};
      }
      ++per_server[server_of[g]];
    }
    for (const auto& [server, n] : per_server) {
      if (n != server_gpus[server]) {
        return Error{s.source + ": " + key + ".gpus (" + j.gpus_text + ") takes " +
                     std::to_string(n) + " of the " + std::to_string(server_gpus[server]) +
                     " GPUs of a server: a job takes whole servers"};
      }
    }
    if (auto ok = check_server_order(s.source + ": " + key, j, server_of); !ok) return ok;
    if (auto ok = validate_job(job_scenario(s, k), topo, where); !ok) return ok;
  }
  return true;
}

}  // namespace stepsim::workload
