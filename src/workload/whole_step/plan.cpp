// The whole step's plan (see plan.hpp): jobs, placement, reference groups and communicators,
// pipeline sends; then the connections, background, folding and folded costs (plan_build.hpp).
#include "src/workload/whole_step/plan.hpp"

#include <algorithm>

#include "src/workload/whole_step/plan_build.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload::whole_step {

const std::vector<std::uint32_t>* CommInfo::ranks_on(NodeId server) const {
  auto it = std::lower_bound(local.begin(), local.end(), server,
                             [](const auto& e, NodeId s) { return e.first < s; });
  return it != local.end() && it->first == server ? &it->second : nullptr;
}

CommOp StepPlan::op_of(std::uint32_t comm, std::uint32_t seq) const {
  const CommInfo& ci = comms[comm];
  if (ci.ref == kNone32) {
    return CommOp{collective::Kind::kSend, ci.send_bytes, ci.gpus, CommGroup::kPp};
  }
  const RefGroup& r = refs[ci.ref];
  CommOp op = jobs[r.job].progs[idx(r.stage)].comm_ops[r.ops[seq]];
  op.gpus = ci.gpus;
  return op;
}

std::uint32_t StepPlan::comm_of(const GpuPlan& g, std::uint32_t op) const {
  const JobPlan& j = jobs[g.job];
  const RefGroup& r = refs[j.stage_op_ref[idx(g.stage)][op]];
  return r.comms[idx(static_cast<int>(g.rank) - g.stage * j.per_stage)];
}

std::uint32_t StepPlan::pipeline_comm(std::uint32_t src, PassKind kind, std::uint32_t chunk,
                                      int dst_stage) const {
  auto it = pp_comm.find({src, static_cast<int>(kind), chunk, dst_stage});
  STEPSIM_CHECK(it != pp_comm.end(), "whole step: a pipeline send without a communicator");
  return it->second;
}

const collective::CollectiveParams& StepPlan::params_at(std::uint32_t comm, collective::Kind kind,
                                                        std::int64_t bytes) const {
  return params[params_of.at(std::make_tuple(comm, static_cast<int>(kind), bytes))];
}

const CommCost& StepPlan::folded_cost(std::uint32_t job, collective::Kind kind, std::int64_t bytes,
                                      std::size_t members) const {
  return folded.at(std::make_tuple(job, static_cast<int>(kind), bytes, members));
}

namespace {

void add_job(StepPlan& p, Scenario s, std::vector<std::uint32_t> gpus) {
  JobPlan j;
  j.place = Placement{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp};
  j.progs = stage_programs(s);
  j.per_stage = j.place.tp * j.place.cp * j.place.dp;
  j.send_bytes = stage_send_bytes(s);
  j.gpus = std::move(gpus);
  j.s = std::move(s);
  p.jobs.push_back(std::move(j));
}

// Every job's GPUs: their coordinates, servers and server plans (in the topology's GPU order).
Result<bool> place_gpus(StepPlan& p, const Scenario& s, const topology::Topology& topo) {
  std::uint32_t n = 0;
  for (const JobPlan& j : p.jobs) {
    for (std::uint32_t g : j.gpus) n = std::max(n, g + 1);
  }
  auto all = collective::make_communicator(topo, static_cast<int>(n));
  if (!all) return all.error();
  p.all = std::move(all).value();
  p.server_index.assign(topo.nodes.size(), -1);
  p.gpus.resize(n);
  for (std::uint32_t g = 0; g < n; ++g) p.gpus[g].gpu = g;
  p.gpu_of_nic = collective::gpu_of_nic_ports(topo);
  for (std::uint32_t k = 0; k < p.jobs.size(); ++k) {
    const JobPlan& j = p.jobs[k];
    for (std::uint32_t rank = 0; rank < j.gpus.size(); ++rank) {
      GpuPlan& r = p.gpus[j.gpus[rank]];
      const RankCoords rc = coords_of(j.place, rank);
      r.job = k;
      r.rank = rank;
      r.used = true;
      r.stage = rc.p;
      r.t = rc.t;
      r.c = rc.c;
      r.d = rc.d;
      r.server = p.all.gpus[r.gpu].server;
      r.reference = rc.t == 0 && rc.c == 0 && rc.d == 0;
    }
  }
  for (const GpuPlan& r : p.gpus) {
    if (!r.used) continue;
    if (p.server_index[r.server] < 0) {
      p.server_index[r.server] = static_cast<std::int32_t>(p.servers.size());
      p.servers.emplace_back();
    }
    p.servers[idx(p.server_index[r.server])].gpus.push_back(r.gpu);
  }
  for (const auto& [g, factor] : s.slow_gpus) {
    if (g < n) p.gpus[g].slowdown = factor;
  }
  return true;
}

std::uint32_t ref_group(StepPlan& p, std::uint32_t job, int stage, Stream stream,
                        const CommOp& op) {
  JobPlan& j = p.jobs[job];
  auto [it, fresh] = j.ref_index.emplace(std::make_pair(stream, op.gpus),
                                         static_cast<std::uint32_t>(p.refs.size()));
  if (fresh) {
    RefGroup r;
    r.job = job;
    r.stage = stage;
    r.stream = stream;
    r.gpus = op.gpus;
    p.refs.push_back(std::move(r));
  }
  // A group that spans stages (DualPipe's mirrored copies) is one group of each stage that
  // runs it: its sequence is its first stage's ops.
  std::vector<std::uint32_t>& refs = j.stage_refs[idx(stage)];
  if (std::find(refs.begin(), refs.end(), it->second) == refs.end()) refs.push_back(it->second);
  return it->second;
}

std::uint32_t add_comm(StepPlan& p, std::uint32_t job, std::vector<std::uint32_t> gpus) {
  CommInfo ci;
  ci.gpus = std::move(gpus);
  ci.job = job;
  std::map<NodeId, std::vector<std::uint32_t>> by_server;
  for (std::uint32_t r = 0; r < ci.gpus.size(); ++r) {
    by_server[p.all.gpus[ci.gpus[r]].server].push_back(r);
  }
  ci.local.assign(by_server.begin(), by_server.end());
  ci.folded = ci.local.size() == 1;
  ci.stage = p.gpus[ci.gpus[0]].stage;
  p.comms.push_back(std::move(ci));
  return static_cast<std::uint32_t>(p.comms.size() - 1);
}

// The reference groups of every stage of `job` and each stage op's group and counter.
void build_ref_groups(StepPlan& p, std::uint32_t job) {
  JobPlan& j = p.jobs[job];
  const auto stages = j.progs.size();
  j.stage_refs.assign(stages, {});
  j.stage_op_ref.assign(stages, {});
  for (std::size_t st = 0; st < stages; ++st) {
    const StageProgram& prog = j.progs[st];
    std::vector<std::uint32_t>& op_ref = j.stage_op_ref[st];
    op_ref.assign(prog.comm_ops.size(), kNone32);
    const int sti = static_cast<int>(st);
    for (const StageOp& op : prog.ops) {
      if (op.kind != StageOpKind::kCollective) continue;
      const std::uint32_t r = ref_group(p, job, sti, Stream::kCompute, prog.comm_ops[op.comm]);
      op_ref[op.comm] = r;
      if (p.refs[r].stage == sti) p.refs[r].ops.push_back(op.comm);
    }
    for (std::uint32_t c : prog.dp) {
      const std::uint32_t r = ref_group(p, job, sti, Stream::kDp, prog.comm_ops[c]);
      op_ref[c] = r;
      if (p.refs[r].stage == sti) p.refs[r].ops.push_back(c);
    }
  }
  j.stage_op_local.assign(stages, {});
  for (std::size_t st = 0; st < stages; ++st) {
    const std::vector<std::uint32_t>& refs = j.stage_refs[st];
    for (std::uint32_t r : j.stage_op_ref[st]) {
      const auto pos = std::find(refs.begin(), refs.end(), r) - refs.begin();
      j.stage_op_local[st].push_back(r == kNone32 ? kNone32 : static_cast<std::uint32_t>(pos));
    }
  }
}

// The communicator of reference group `ri`'s copy with GPUs `gpus` (made on first use).
std::uint32_t ref_copy(StepPlan& p, std::uint32_t job, std::size_t ri,
                       const std::vector<std::uint32_t>& gpus) {
  // The stream is part of a communicator's identity (NCCL: separate communicators).
  std::vector<std::uint32_t> key = gpus;
  key.push_back(static_cast<std::uint32_t>(ri));
  if (auto it = p.comm_index.find(key); it != p.comm_index.end()) return it->second;
  const std::uint32_t ci = add_comm(p, job, gpus);
  p.comms[ci].ref = static_cast<std::uint32_t>(ri);
  p.comms[ci].instances = static_cast<std::uint32_t>(p.refs[ri].ops.size());
  p.comm_index.emplace(std::move(key), ci);
  return ci;
}

// The reference groups of every stage of `job`, and their copies: one communicator each.
Result<bool> build_comms(StepPlan& p, std::uint32_t job) {
  const std::size_t first_ref = p.refs.size();
  build_ref_groups(p, job);
  const JobPlan& j = p.jobs[job];
  // Each GPU's copy of each reference group of its stage.
  for (std::size_t ri = first_ref; ri < p.refs.size(); ++ri) {
    p.refs[ri].comms.assign(idx(j.per_stage), kNone32);
    for (int i = 0; i < j.per_stage; ++i) {
      const RefGroup& r = p.refs[ri];
      if (r.comms[idx(i)] != kNone32) continue;
      const GpuPlan& gr = p.gpus[j.gpu(r.stage, i)];
      const std::vector<std::uint32_t> ranks = translate_group(j.place, r.gpus, gr.t, gr.c, gr.d);
      std::vector<std::uint32_t> gpus;
      for (std::uint32_t m : ranks) gpus.push_back(j.gpus[m]);
      const std::uint32_t ci = ref_copy(p, job, ri, gpus);
      for (std::uint32_t m : ranks) {
        // A member of another stage: that stage runs the group too, and its GPU there has the
        // same index in its stage (the group varies in the pipeline coordinate only).
        const int stage = coords_of(j.place, m).p;
        const std::vector<std::uint32_t>& there = j.stage_refs[idx(stage)];
        const int local = static_cast<int>(m) - stage * j.per_stage;
        if (stage != r.stage &&
            (local != i || std::find(there.begin(), there.end(), static_cast<std::uint32_t>(ri)) ==
                               there.end())) {
          return Error{"whole step: a group of stage " + std::to_string(r.stage) +
                       " reaches another stage (placement)"};
        }
        p.refs[ri].comms[idx(local)] = ci;
      }
    }
  }
  return true;
}

// Pipeline sends of `job`: one communicator per (sender, kind, chunk, receiving stage); the
// sequence number is the micro-batch (of the chunk's: DualPipe feeds half from each end).
void build_pipeline_comms(StepPlan& p, std::uint32_t job) {
  const JobPlan& j = p.jobs[job];
  if (j.send_bytes <= 0) return;
  const auto micro = static_cast<std::uint32_t>(chunk_micro_batches(pipeline_shape(j.s)));
  for (const StageProgram& prog : j.progs) {
    for (const StageOp& op : prog.ops) {
      if (op.kind != StageOpKind::kSend) continue;
      for (int i = 0; i < j.per_stage; ++i) {
        const std::uint32_t src = j.gpu(prog.stage, i);
        const GpuPlan& g = p.gpus[src];
        const auto key = std::make_tuple(src, static_cast<int>(op.pass), op.chunk, op.peer);
        if (p.pp_comm.count(key) != 0) continue;
        const std::uint32_t dst = j.gpus[j.place.rank(g.t, g.c, g.d, op.peer)];
        const std::uint32_t ci = add_comm(p, job, {src, dst});
        p.comms[ci].send_bytes = j.send_bytes;
        p.comms[ci].instances = micro;
        p.pp_comm.emplace(key, ci);
      }
    }
  }
}

}  // namespace

Result<StepPlan> make_plan(const Scenario& s, const topology::Topology& topo,
                           const std::vector<CommModel*>& folded) {
  StepPlan p;
  if (s.jobs.empty()) {
    std::vector<std::uint32_t> gpus(static_cast<std::size_t>(s.par.world()));
    for (std::uint32_t g = 0; g < gpus.size(); ++g) gpus[g] = g;
    add_job(p, s, std::move(gpus));
  }
  for (std::size_t k = 0; k < s.jobs.size(); ++k) add_job(p, job_scenario(s, k), s.jobs[k].gpus);
  if (auto ok = place_gpus(p, s, topo); !ok) return ok.error();
  for (std::uint32_t k = 0; k < p.jobs.size(); ++k) {
    if (auto ok = build_comms(p, k); !ok) return ok.error();
    build_pipeline_comms(p, k);
  }
  if (auto ok = fold(p, s, topo); !ok) return ok.error();
  for (CommInfo& ci : p.comms) {
    ci.record_base = p.records;
    p.records += ci.instances;
  }
  if (auto ok = build_connections(p, s, topo); !ok) return ok.error();
  if (auto ok = build_background(p, s, topo); !ok) return ok.error();
  if (auto ok = cost_folded(p, folded); !ok) return ok.error();
  return p;
}

void select_traced(const std::vector<std::uint32_t>& gpus, StepPlan& p) {
  for (GpuPlan& r : p.gpus) r.traced = r.used && gpus.empty() && r.reference;
  for (std::uint32_t g : gpus) {
    if (g < p.gpus.size() && p.gpus[g].used) p.gpus[g].traced = true;
  }
  for (GpuPlan& r : p.gpus) r.trace_source = r.traced && r.mirror == kNone32;
  for (const GpuPlan& r : p.gpus) {
    if (r.traced && r.mirror != kNone32) p.gpus[r.mirror].trace_source = true;
  }
}

}  // namespace stepsim::workload::whole_step
