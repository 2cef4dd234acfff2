// Gathering the whole step's trace (runtime.hpp): every GPU's clocks, the collectives' records,
// the reference pipelines' ops and the flows, reduced over the ranks in a rank-independent order.
#include <algorithm>
#include <tuple>

#include "src/workload/memoized_comm.hpp"
#include "src/workload/whole_step/runtime.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::workload::whole_step {
namespace {

// One GPU's clocks at the end of the run, gathered over the ranks by its declared statistics
// (core/stat_table.hpp, stat::allreduce): its server's rank fills it, the other ranks keep the
// defaults, which are the reductions' identities.
struct GpuClock {
  std::int64_t end_ps = -1;  // its program's end; -1: it did not finish
  std::int64_t compute_ps = 0;
  std::int64_t bubble_ps = 0;
  std::int64_t optimizer_ps = 0;
  std::int64_t exposed_tp_ps = 0;
  std::int64_t exposed_cp_ps = 0;
  std::int64_t exposed_ep_ps = 0;
  std::int64_t exposed_pp_ps = 0;
  std::int64_t exposed_dp_ps = 0;
  std::int64_t waiting_since_ps = -1;  // since when it waits (a GPU that did not finish)
  std::int64_t ep_hidden_ps = 0;       // moe.overlap: EP time hidden behind the partner pass
};
constexpr auto stat_table(std::type_identity<GpuClock>) {
  using S = GpuClock;
  return std::array{stat::max("end_ps", "ps", &S::end_ps),
                    stat::sum("compute_ps", "ps", &S::compute_ps),
                    stat::sum("bubble_ps", "ps", &S::bubble_ps),
                    stat::sum("optimizer_ps", "ps", &S::optimizer_ps),
                    stat::sum("exposed_tp_ps", "ps", &S::exposed_tp_ps),
                    stat::sum("exposed_cp_ps", "ps", &S::exposed_cp_ps),
                    stat::sum("exposed_ep_ps", "ps", &S::exposed_ep_ps),
                    stat::sum("exposed_pp_ps", "ps", &S::exposed_pp_ps),
                    stat::sum("exposed_dp_ps", "ps", &S::exposed_dp_ps),
                    stat::max("waiting_since_ps", "ps", &S::waiting_since_ps),
                    stat::sum("ep_hidden_ps", "ps", &S::ep_hidden_ps)};
}
static_assert(sizeof(GpuClock) == stat::kCount<GpuClock> * sizeof(std::int64_t),
              "every member of GpuClock has its line in the table");
// The exposed members by CommGroup (comm_model.hpp's order).
constexpr std::array<std::int64_t GpuClock::*, kCommGroups> kExposedPs{
    &GpuClock::exposed_tp_ps, &GpuClock::exposed_cp_ps, &GpuClock::exposed_ep_ps,
    &GpuClock::exposed_pp_ps, &GpuClock::exposed_dp_ps};
static_assert(static_cast<int>(CommGroup::kTp) == 0 && static_cast<int>(CommGroup::kCp) == 1 &&
              static_cast<int>(CommGroup::kEp) == 2 && static_cast<int>(CommGroup::kPp) == 3 &&
              static_cast<int>(CommGroup::kDp) == 4);

}  // namespace

// Each stage's clock (its slowest GPU's; the jobs' stages in turn) into trace.stages, and why
// the run ended. An error: the simulation stalled (GPUs wait with nothing left to happen).
Result<StepStop> StepApp::collect_stages(pdes::Sync& sync, const nic::RdmaRun& run, bool stopped,
                                         StepTrace& trace) {
  // Each GPU's clocks (its server's rank fills them; the others keep the defaults).
  const std::size_t n = gpus_.size();
  std::vector<GpuClock> clocks(n);
  for (std::size_t si = 0; si < servers_.size(); ++si) {
    if (!servers_[si].here) continue;
    for (std::uint32_t gi : plan_.servers[si].gpus) {
      const GpuRun& g = gpus_[gi];
      GpuClock& c = clocks[gi];
      c.end_ps = g.wait == Wait::kDone ? g.end.picoseconds() : -1;
      c.compute_ps = g.compute;
      c.bubble_ps = g.bubble;
      c.optimizer_ps = g.optimizer;
      for (int k = 0; k < kCommGroups; ++k) c.*kExposedPs[idx(k)] = g.exposed[idx(k)];
      c.waiting_since_ps = g.since.picoseconds();
      c.ep_hidden_ps = g.ep_hidden;
    }
  }
  stat::allreduce(sync, clocks);
  for (std::uint32_t gi = 0; gi < n; ++gi) {
    if (plan_.gpus[gi].mirror != kNone32) clocks[gi] = clocks[plan_.gpus[gi].mirror];
  }
  std::vector<std::size_t> base;  // by job: its first stage in trace.stages
  for (const JobPlan& j : plan_.jobs) {
    base.push_back(trace.stages.size());
    trace.stages.resize(trace.stages.size() + j.progs.size());
    if (!s_.jobs.empty()) trace.job_stages.push_back(static_cast<std::uint32_t>(j.progs.size()));
  }
  std::vector<std::int64_t> stage_end(trace.stages.size(), -1);
  const std::int64_t last = run.stats.final_time.picoseconds();
  std::uint64_t unfinished = 0;
  std::uint32_t first_stuck = kNone32;
  for (std::uint32_t gi = 0; gi < n; ++gi) {
    if (!plan_.gpus[gi].used) continue;
    const GpuClock& c = clocks[gi];
    const bool done = c.end_ps >= 0;
    if (!done) {
      ++unfinished;
      if (first_stuck == kNone32) first_stuck = gi;
    }
    // The stage's clock is its slowest GPU's (one that did not finish: the run's end).
    const std::int64_t stuck = c.waiting_since_ps;
    const std::int64_t end = done ? c.end_ps : std::min(last, stopped || stuck <= 0 ? last : stuck);
    const std::size_t st = base[plan_.gpus[gi].job] + idx(plan_.gpus[gi].stage);
    if (end <= stage_end[st]) continue;
    stage_end[st] = end;
    StageTime& t = trace.stages[st];
    t.t = static_cast<double>(end) * 1e-12;
    t.compute = static_cast<double>(c.compute_ps) * 1e-12;
    t.bubble = static_cast<double>(c.bubble_ps) * 1e-12;
    t.optimizer = static_cast<double>(c.optimizer_ps) * 1e-12;
    t.ep_hidden = static_cast<double>(c.ep_hidden_ps) * 1e-12;
    for (int k = 0; k < kCommGroups; ++k) {
      t.exposed[k] = static_cast<double>(c.*kExposedPs[idx(k)]) * 1e-12;
    }
  }
  std::vector<std::uint64_t> failed{0};
  for (const ServerState& ss : servers_) failed[0] += ss.failed;
  sync.allreduce_sum(failed);
  trace.failed_transfers = failed[0];
  if (unfinished > 0 && failed[0] == 0 && !stopped && run.stats.completed &&
      run.stats.final_time < s_.end) {
    const GpuRun& g = gpus_[first_stuck];
    const std::string job = s_.jobs.empty() ? "" : ", job " + s_.jobs[g.p->job].name;
    return Error{"whole step: " + std::to_string(unfinished) + " GPUs did not finish (GPU " +
                 std::to_string(first_stuck) + job + ", stage " + std::to_string(g.p->stage) +
                 ", stopped at op " + std::to_string(g.pc) + "): the simulation stalled"};
  }
  return stopped           ? StepStop::kInterrupted
         : unfinished == 0 ? StepStop::kDone
         : failed[0] > 0   ? StepStop::kFailed
                           : StepStop::kEnd;
}

// The collectives: first arrival to last member done, over every rank. Every collective of the
// plan is a row, so that a row's id is its number and the flows' ids point into the table; in an
// interrupted step one that had not started or finished has -1 for the time it lacks.
void StepApp::collect_collectives(pdes::Sync& sync, StepTrace& trace) const {
  std::vector<std::int64_t> se(2 * plan_.records);
  for (std::uint64_t i = 0; i < plan_.records; ++i) {
    se[i] = -rec_start_[i].load();
    se[plan_.records + i] = -rec_end_[i].load();
  }
  sync.allreduce_min(se);
  for (std::uint32_t ci = 0; ci < plan_.comms.size(); ++ci) {
    const CommInfo& c = plan_.comms[ci];
    // A mirror (step.fold rails) ran as its rail-0 copy.
    const std::uint64_t base = c.mirror ? plan_.comms[c.rep].record_base : c.record_base;
    for (std::uint32_t q = 0; q < c.instances; ++q) {
      const std::uint64_t i = c.record_base + q;
      const std::int64_t start = -se[base + q];
      const std::int64_t end = -se[plan_.records + base + q];
      const bool ran = start >= 0 && end >= start;
      const CommOp op = plan_.op_of(ci, q);
      CollectiveRecord r;
      r.id = static_cast<std::uint32_t>(i);
      r.job = c.job;
      r.stage = static_cast<std::uint32_t>(c.stage);
      r.group = op.group;
      r.kind = op.kind;
      r.bytes = op.bytes;
      r.gpus = static_cast<std::uint32_t>(op.gpus.size());
      r.start_s = start >= 0 ? static_cast<double>(start) * 1e-12 : -1;
      r.end_s = ran ? static_cast<double>(end) * 1e-12 : -1;
      r.members = ci;
      r.busbw_gbs = ran && end > start
                        ? static_cast<double>(op.bytes) /
                              (static_cast<double>(end - start) * 1e-12) / 1e9 *
                              collective::busbw_factor(op.kind, static_cast<int>(op.gpus.size()))
                        : 0;
      trace.colls.push_back(r);
    }
  }
  trace.member_sets.reserve(plan_.comms.size());
  for (const CommInfo& c : plan_.comms) trace.member_sets.push_back(c.gpus);
}

// The reference pipelines' ops (job by job, stage by stage) and the flows, from every rank;
// returns the RDMA messages' completion times. An op is recorded when it starts, with the end
// its timer will have: in an interrupted step (stop_s >= 0) those past the stop end there.
LogHistogram StepApp::collect_records(pdes::Sync& sync, StepTrace& trace, double stop_s) {
  std::vector<OpRecord> ops;
  std::vector<OpRecord> traced;
  std::vector<FlowRow> flows;
  LogHistogram fct;
  const auto keep = [stop_s](std::vector<OpRecord>& out, OpRecord r) {
    if (stop_s >= 0 && r.start_s > stop_s) return;
    if (stop_s >= 0) r.end_s = std::min(r.end_s, stop_s);
    out.push_back(r);
  };
  for (ServerState& ss : servers_) {
    for (const OpRecord& r : ss.ops) keep(ops, r);
    for (const OpRecord& r : ss.trace_ops) keep(traced, r);
    flows.insert(flows.end(), ss.flows.begin(), ss.flows.end());
    fct.merge(ss.fct);
  }
  trace.ops = sync.all_gather(ops);
  std::stable_sort(trace.ops.begin(), trace.ops.end(), [](const OpRecord& a, const OpRecord& b) {
    return std::tie(a.job, a.stage) < std::tie(b.job, b.stage);
  });
  collect_traced(sync.all_gather(traced), trace);
  std::vector<FlowRow> all_flows = sync.all_gather(flows);
  std::sort(all_flows.begin(), all_flows.end(), [](const FlowRow& a, const FlowRow& b) {
    return std::tie(a.collective, a.src_nic, a.dst_nic, a.messages) <
           std::tie(b.collective, b.src_nic, b.dst_nic, b.messages);
  });
  for (const FlowRow& f : all_flows) {
    if (!trace.flows.empty() && trace.flows.back().collective == f.collective &&
        trace.flows.back().src_nic == f.src_nic && trace.flows.back().dst_nic == f.dst_nic) {
      stat::combine(trace.flows.back(), f);  // the same flow, from another server
    } else {
      trace.flows.push_back(f);
    }
  }
  std::vector<std::uint64_t> bins(fct.bins().begin(), fct.bins().end());
  sync.allreduce_sum(bins);
  std::copy(bins.begin(), bins.end(), fct.bins().begin());
  return fct;
}

// Scenario::trace: the traced GPUs and their ops, GPU by GPU (one GPU's come from its one
// server, in the order they ran); a step.fold mirror shows those of the rail-0 GPU it copies.
void StepApp::collect_traced(std::vector<OpRecord> all, StepTrace& trace) const {
  std::stable_sort(all.begin(), all.end(),
                   [](const OpRecord& a, const OpRecord& b) { return a.gpu < b.gpu; });
  for (const GpuPlan& g : plan_.gpus) {
    if (!g.traced) continue;
    trace.trace_gpus.push_back(g.gpu);
    const std::uint32_t source = g.mirror != kNone32 ? g.mirror : g.gpu;
    OpRecord probe;
    probe.gpu = source;
    const auto [lo, hi] =
        std::equal_range(all.begin(), all.end(), probe,
                         [](const OpRecord& a, const OpRecord& b) { return a.gpu < b.gpu; });
    for (auto it = lo; it != hi; ++it) {
      OpRecord r = *it;
      r.gpu = g.gpu;
      trace.trace_ops.push_back(r);
    }
  }
}

Result<StepTrace> StepApp::collect(pdes::Sync& sync, nic::RdmaRun& run, bool stopped) {
  StepTrace trace;
  auto stop = collect_stages(sync, run, stopped, trace);
  if (!stop) return stop.error();
  trace.stop = *stop;
  trace.folded_rails = plan_.rails;
  trace.foldable_rails = plan_.foldable;
  collect_collectives(sync, trace);
  const LogHistogram fct =
      collect_records(sync, trace, stopped ? run.stats.final_time.seconds() : -1.0);
  // The whole run's fabric, as one "distinct collective" for the summary.
  DistinctCollective d;
  d.first = 0;
  d.repeats = 1;
  fill_fabric(d.cost, run, {});
  d.cost.message_fct = std::make_shared<const LogHistogram>(fct);
  d.cost.digest = run.stats.digest;
  trace.distinct.push_back(std::move(d));
  return trace;
}

}  // namespace stepsim::workload::whole_step
