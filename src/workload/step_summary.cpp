// The reduction of a step's trace into its result (see step_summary.hpp).
#include "stepsim/workload/step_summary.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/core/hash.hpp"
#include "stepsim/core/percentile.hpp"

namespace stepsim::workload {
namespace {

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

// A row of an interrupted whole step can stand for a collective that did not start or finish.
bool finished(const CollectiveRecord& c) {
  return c.start_s >= 0 && c.end_s >= c.start_s;
}

// Count, busbw and bytes per group over every collective; what the fabric saw over the
// distinct ones.
void reduce_collectives(const StepTrace& t, StepResult& r) {
  for (const CollectiveRecord& c : t.colls) {
    if (!finished(c)) continue;  // an interrupted step's row of one that did not finish
    const auto gi = static_cast<int>(c.group);
    ++r.collectives[gi];
    r.busbw_gbs[gi] += c.busbw_gbs;
    r.comm_bytes[gi] += static_cast<double>(c.bytes);
  }
  for (int i = 0; i < kCommGroups; ++i) {
    if (r.collectives[i] > 0) r.busbw_gbs[i] /= static_cast<double>(r.collectives[i]);
  }
  for (const DistinctCollective& d : t.distinct) {
    const CommCost& c = d.cost;
    ++r.distinct_collectives;
    r.drops += c.drops;
    r.retransmissions += c.retransmissions;
    r.paused_s += static_cast<double>(c.paused_ps) * 1e-12;
    r.events += c.events;
    r.engine.add(c.engine);
  }
}

// The critical stage (the last to finish) of stages [first, first + n) and its time split.
template <class R>
void reduce_stages(const StepTrace& t, std::size_t first, std::size_t n, R& r) {
  std::uint32_t crit = 0;
  for (std::uint32_t st = 0; st < n; ++st) {
    if (t.stages[first + st].t > t.stages[first + crit].t) crit = st;
  }
  const StageTime& g = t.stages[first + crit];
  r.step_s = g.t;
  r.critical_stage = crit;
  r.compute_s = g.compute;
  r.bubble_s = g.bubble;
  r.optimizer_s = g.optimizer;
  for (int i = 0; i < kCommGroups; ++i) r.exposed_s[i] = g.exposed[i];
  // A job's result has no hidden EP time: jobs run the whole step, which has no moe.overlap.
  if constexpr (requires { r.ep_hidden_s; }) r.ep_hidden_s = g.ep_hidden;
}

// Model FLOPs, tokens and MFU of one job's step (`s`: the job's scenario).
template <class R>
void reduce_mfu(const Scenario& s, R& r) {
  const double tokens = static_cast<double>(s.par.global_batch) * s.model.seq_len;
  r.model_flops = s.model.model_flops_per_token() * tokens;
  r.peak_flops = gpu::peak_flops(s.gpu, s.model.precision);
  r.mfu = mfu(r.model_flops, r.step_s, s.par.world(), r.peak_flops);
}

// A multi-job run: each job's step (its stages' slice of the trace) and the run's: the last
// job to finish sets step_s and the split; MFU is the jobs' model FLOPs (each over its peak)
// over step_s and all their GPUs.
void reduce_jobs(const Scenario& s, const StepTrace& t, StepResult& r) {
  std::size_t first = 0;
  double busy = 0;  // sum over jobs of model FLOPs / peak (GPU-seconds of useful work)
  std::int64_t gpus = 0;
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    const Scenario js = job_scenario(s, k);
    JobResult j;
    j.name = s.jobs[k].name;
    j.gpus_text = s.jobs[k].gpus_text;
    j.gpus = static_cast<std::uint32_t>(s.jobs[k].gpus.size());
    const int per_stage = js.par.tp * js.par.cp * js.par.data_parallel();
    for (int p = 0; p < js.par.pp; ++p) j.stage_gpu.push_back(s.jobs[k].gpus[idx(p * per_stage)]);
    reduce_stages(t, first, t.job_stages[k], j);
    first += t.job_stages[k];
    reduce_mfu(js, j);
    j.tokens_per_step = static_cast<double>(js.par.global_batch) * js.model.seq_len;
    for (const CollectiveRecord& c : t.colls) j.collectives += c.job == k && finished(c) ? 1 : 0;
    if (j.step_s > r.step_s || k == 0) {
      r.critical_job = static_cast<std::uint32_t>(k);
      r.step_s = j.step_s;
      r.critical_stage = j.critical_stage;
      r.compute_s = j.compute_s;
      r.bubble_s = j.bubble_s;
      r.optimizer_s = j.optimizer_s;
      for (int i = 0; i < kCommGroups; ++i) r.exposed_s[i] = j.exposed_s[i];
    }
    r.model_flops += j.model_flops;
    if (j.peak_flops > 0) busy += j.model_flops / j.peak_flops;
    gpus += j.gpus;
    r.jobs.push_back(std::move(j));
  }
  r.peak_flops = r.jobs[0].peak_flops;
  r.mfu = r.step_s > 0 && gpus > 0 ? busy / (r.step_s * static_cast<double>(gpus)) : 0;
}

// Completion-time percentiles: the network groups' collectives, and the RDMA messages of the
// distinct collectives times their repetitions.
void reduce_percentiles(const StepTrace& t, StepResult& r) {
  std::vector<double> cct;
  for (const CollectiveRecord& c : t.colls) {
    if (c.group != CommGroup::kTp && finished(c)) cct.push_back((c.end_s - c.start_s) * 1e6);
  }
  if (!cct.empty()) {
    std::sort(cct.begin(), cct.end());
    r.cct_p50_us = nearest_rank(cct, 0.5);
    r.cct_p99_us = nearest_rank(cct, 0.99);
    r.cct_max_us = cct.back();
  }
  LogHistogram fct;
  for (const DistinctCollective& d : t.distinct) {
    if (d.cost.message_fct) fct.merge(*d.cost.message_fct, d.repeats);
  }
  r.messages = fct.count();
  r.fct_p50_us = fct.quantile(0.5) * 1e-6;
  r.fct_p99_us = fct.quantile(0.99) * 1e-6;
  r.fct_max_us = fct.quantile(1.0) * 1e-6;
}

// Picoseconds of a step time in seconds.
std::int64_t to_ps(double seconds) {
  return static_cast<std::int64_t>(std::llround(seconds * 1e12));
}

// The flows of one distinct collective: each direction of its connections that sent anything,
// with its first occurrence's times (the record's start plus the offsets in its packet run).
void add_flows(const DistinctCollective& d, const CollectiveRecord& first,
               const std::vector<std::uint32_t>& gpu_of_port, std::vector<FlowRow>& flows) {
  const CommCost& c = d.cost;
  if (!c.connections || !c.flows) return;
  const std::int64_t t0 = to_ps(first.start_s);
  for (std::size_t i = 0; i < c.connections->size(); ++i) {
    const nic::Connection& cn = (*c.connections)[i];
    for (int side = 0; side < 2; ++side) {
      const collective::ConnectionFlow& x = (*c.flows)[2 * i + static_cast<std::size_t>(side)];
      if (x.messages == 0) continue;
      FlowRow f;
      f.collective = d.first;
      f.repeats = d.repeats;
      f.src_nic = side == 0 ? cn.a : cn.b;
      f.dst_nic = side == 0 ? cn.b : cn.a;
      f.src_gpu = gpu_of_port[f.src_nic];
      f.dst_gpu = gpu_of_port[f.dst_nic];
      f.group = first.group;
      f.kind = first.kind;
      f.bytes = x.bytes;
      f.messages = x.messages;
      f.packets = x.packets;
      f.retransmitted = x.retransmitted;
      f.ecn_marked = x.ecn_marked;
      f.start_ps = t0 + x.first_post_ps;
      f.first_byte_ps = x.first_byte_ps >= 0 ? t0 + x.first_byte_ps : -1;
      f.end_ps = t0 + x.last_done_ps;
      flows.push_back(f);
    }
  }
}

// The ports one distinct collective used, times its repetitions, added to `links`.
void add_links(const DistinctCollective& d, std::vector<LinkRow>& links) {
  if (!d.cost.ports) return;
  const double k = d.repeats;
  for (const auto& [p, ps] : *d.cost.ports) {
    LinkRow& l = links[p];
    l.bytes += k * static_cast<double>(ps.bytes);
    l.packets += k * static_cast<double>(ps.packets);
    l.ecn_marks += k * static_cast<double>(ps.ecn_marks);
    l.pause_sent += k * static_cast<double>(ps.pause_sent);
    l.drops += k * static_cast<double>(ps.drops());
    l.busy_s += k * static_cast<double>(ps.busy_ps) * 1e-12;
    l.paused_s += k * static_cast<double>(ps.paused_ps) * 1e-12;
  }
}

// Flows and links: each distinct collective's connections and ports, times its repetitions, in
// the order the collectives first ran.
void reduce_fabric(const StepTrace& t, const topology::Topology& topo, StepResult& r) {
  std::vector<LinkRow> links(topo.ports.size());
  // No collective records (run_step_totals): no flow rows either (they take their records' times).
  const bool records = !t.colls.empty();
  const std::vector<std::uint32_t> gpu_of_port =
      records ? collective::gpu_of_nic_ports(topo) : std::vector<std::uint32_t>();
  for (const DistinctCollective& d : t.distinct) {
    if (records) add_flows(d, t.colls[d.first], gpu_of_port, r.flows);
    add_links(d, links);
  }
  r.flows.insert(r.flows.end(), t.flows.begin(), t.flows.end());
  for (std::uint32_t p = 0; p < links.size(); ++p) {
    if (links[p].packets == 0 && links[p].pause_sent == 0 && links[p].drops == 0) continue;
    links[p].port = p;
    links[p].node = topo.ports[p].node;
    links[p].link = topo.ports[p].link;
    links[p].tier = topo.nodes[topo.ports[p].node].tier;
    r.links.push_back(links[p]);
  }
}

}  // namespace

bool flow_row_sampled(std::uint32_t collective, int k) {
  return k <= 1 ||
         mix64(hash_combine(0x666c6f7773ULL, collective)) % static_cast<std::uint64_t>(k) == 0;
}

void select_flows(const OutputParams& out, StepResult& r) {
  r.flow_rows_total = r.flows.size();
  std::string mode = out.flows;
  if (mode == "auto") mode = r.flows.size() <= OutputParams::kAutoFlowRows ? "all" : "sampled";
  if (mode == "none") {
    r.flows.clear();
    r.flows.shrink_to_fit();
    r.flows_sample = 0;
  } else if (mode == "sampled") {
    const int k = out.flows_sample;
    std::erase_if(r.flows, [k](const FlowRow& f) { return !flow_row_sampled(f.collective, k); });
    r.flows_sample = static_cast<std::uint32_t>(k);
  } else {
    r.flows_sample = 1;
  }
}

StepResult summarize_step(const Scenario& s, const topology::Topology& topo, StepTrace trace) {
  StepResult r;
  r.complete = trace.stop == StepStop::kDone;
  r.interrupted = trace.stop == StepStop::kInterrupted;
  r.failed_transfers = trace.failed_transfers;
  r.folded_rails = trace.folded_rails;
  r.foldable_rails = trace.foldable_rails;
  reduce_collectives(trace, r);
  if (s.jobs.empty()) {
    reduce_stages(trace, 0, trace.stages.size(), r);
    reduce_mfu(s, r);
  } else {
    reduce_jobs(s, trace, r);
  }
  reduce_percentiles(trace, r);
  reduce_fabric(trace, topo, r);
  select_flows(s.output, r);
  std::uint64_t h = hash_combine(0, static_cast<std::uint64_t>(std::llround(r.step_s * 1e12)));
  for (const DistinctCollective& d : trace.distinct) h = hash_combine(h, d.cost.digest);
  r.digest = h;
  r.ops = std::move(trace.ops);
  r.colls = std::move(trace.colls);
  r.member_sets = std::move(trace.member_sets);
  r.trace_gpus = std::move(trace.trace_gpus);
  r.trace_ops = std::move(trace.trace_ops);
  return r;
}

}  // namespace stepsim::workload
