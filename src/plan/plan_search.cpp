#include "src/plan/plan_search.hpp"

#include "src/cli/report.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/memory_model.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::plan {
namespace {

Outcome outcome_of(const workload::StepResult& r, const workload::Scenario& s) {
  Outcome o;
  o.step_s = r.step_s;
  o.mfu = r.mfu;
  o.complete = r.complete;
  o.tokens_per_s_per_gpu = r.step_s > 0 ? static_cast<double>(s.par.global_batch) *
                                              s.model.seq_len / r.step_s / s.par.world()
                                        : 0;
  o.compute_s = r.compute_s;
  o.bubble_s = r.bubble_s;
  for (int g = 0; g < workload::kCommGroups; ++g) {
    o.exposed_s[static_cast<std::size_t>(g)] = r.exposed_s[g];
  }
  return o;
}

}  // namespace

Result<workload::Scenario> layout_scenario(const workload::Scenario& base,
                                           const topology::Topology& topo, const Layout& l) {
  workload::Scenario s = base;
  apply_layout(l, s);
  if (auto ok = workload::validate_layout(s, topo); !ok) return ok.error();
  return s;
}

void add_memory(const workload::Scenario& s, Candidate& c) {
  const workload::MemoryReport m = workload::estimate_memory(s);
  c.memory_peak = m.peak();
  c.capacity = m.capacity;
  c.peak_stage = m.peak_stage;
  c.fits = m.fits();
  if (!m.stages.empty()) {
    const auto top = m.stages[static_cast<std::size_t>(m.peak_stage)].largest(1);
    if (!top.empty()) c.largest_term = top.front().name;
  }
}

Result<Outcome> run_analytical(const workload::Scenario& s, const topology::Topology& topo,
                               const std::shared_ptr<workload::AnalyticalCache>& cache) {
  auto comm = workload::make_analytical_comm(topo, s, cache);
  auto r = workload::run_step_totals(s, topo, *comm);
  if (!r) return r.error();
  return outcome_of(*r, s);
}

Result<Outcome> run_confirm(const workload::Scenario& base, const topology::Topology& topo,
                            const std::string& confirm, int threads, int rank) {
  workload::Scenario s = base;
  if (confirm == "whole") {
    s.step_mode = "whole";
    if (s.fidelity != "packet" && s.fidelity != "cell") s.fidelity = "cell";
  } else {
    s.step_mode = "memoized";
    s.fidelity = confirm;
  }
  // MPI where a launcher started the processes, SerialSync for a lone process.
  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  pdes::EngineOptions opts = cli::bench_engine_options(threads, SimTime::never(), false, rank);
  const bool whole = workload::runs_whole_step(s);
  opts.partitioner = whole ? "cyclic" : "metis";
  auto comm = workload::make_packet_comm(topo, s, sync, opts);
  Result<workload::StepResult> r = Error{""};
  if (whole) {
    pdes::EngineOptions step_opts = opts;
    step_opts.end = s.end;
    r = workload::run_whole_step(s, topo, {comm.get()}, sync, step_opts);
  } else {
    r = workload::run_step(s, topo, *comm);
  }
  if (!r) return r.error();
  return outcome_of(*r, s);
}

double objective(const Outcome& o, const std::string& name) {
  return name == "mfu" ? o.mfu : o.tokens_per_s_per_gpu;
}

}  // namespace stepsim::plan
