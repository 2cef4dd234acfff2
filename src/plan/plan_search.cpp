#include "src/plan/plan_search.hpp"

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "src/cli/report.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/memory_model.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::plan {

struct ConfirmCache {
  // (kind, bytes, GPUs, copies): the copies of the collective run beside it on the other TP
  // (and CP) ranks (the packet model's, with scenario.concurrent).
  using Key = std::tuple<int, std::int64_t, std::vector<std::uint32_t>, int>;
  std::map<Key, workload::CommCost> costs;
  ConfirmCacheStats stats;
};

std::shared_ptr<ConfirmCache> make_confirm_cache() {
  return std::make_shared<ConfirmCache>();
}

ConfirmCacheStats confirm_cache_stats(const ConfirmCache& cache) {
  return cache.stats;
}

namespace {

// A layout's packet (or cell) model drawing on and adding to the search's ConfirmCache. Within
// the layout it memoizes by (kind, size, GPUs) as the packet model does (the first collective
// asked for with a key sets its cost, whatever group asks later), so the step asks the same
// questions and gets the same answers as with the packet model alone.
class SharedPacketComm final : public workload::CommModel {
 public:
  SharedPacketComm(const workload::Scenario& s, std::unique_ptr<workload::CommModel> inner,
                   std::shared_ptr<ConfirmCache> cache)
      : s_(s), inner_(std::move(inner)), cache_(std::move(cache)) {}
  Result<workload::CommCost> cost(const workload::CommOp& op) override {
    if (op.bytes <= 0 || op.gpus.size() < 2) return inner_->cost(op);  // free: nothing to share
    auto mine = std::make_tuple(static_cast<int>(op.kind), op.bytes, op.gpus);
    if (auto it = memo_.find(mine); it != memo_.end()) return it->second;
    ConfirmCache::Key key{static_cast<int>(op.kind), op.bytes, op.gpus, copies(op)};
    if (auto it = cache_->costs.find(key); it != cache_->costs.end()) {
      ++cache_->stats.reused;
      memo_.emplace(std::move(mine), it->second);
      return it->second;
    }
    auto c = inner_->cost(op);
    if (!c || c->stopped) return c;
    ++cache_->stats.runs;
    cache_->costs.emplace(std::move(key), *c);
    memo_.emplace(std::move(mine), *c);
    return c;
  }
  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] bool wants_all_ops() const override { return inner_->wants_all_ops(); }
  Result<bool> prepare(const std::vector<workload::CommOp>& ops) override {
    return inner_->prepare(ops);
  }
  [[nodiscard]] bool repeats_free() const override { return true; }

 private:
  // The copies the packet model runs beside `op` (packet_comm.cpp): the other TP ranks' for a
  // CP collective, the other TP and CP ranks' for the other groups, none for TP's.
  [[nodiscard]] int copies(const workload::CommOp& op) const {
    if (!s_.concurrent || op.group == workload::CommGroup::kTp) return 1;
    return op.group == workload::CommGroup::kCp ? s_.par.tp : s_.par.tp * s_.par.cp;
  }
  const workload::Scenario& s_;
  std::unique_ptr<workload::CommModel> inner_;
  std::shared_ptr<ConfirmCache> cache_;
  std::map<std::tuple<int, std::int64_t, std::vector<std::uint32_t>>, workload::CommCost> memo_;
};

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
                            const std::string& confirm, int threads, int rank,
                            const std::shared_ptr<ConfirmCache>& cache) {
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
  opts.partitioner = whole ? "spread" : "metis";
  std::unique_ptr<workload::CommModel> comm = workload::make_packet_comm(topo, s, sync, opts);
  if (cache && !whole) comm = std::make_unique<SharedPacketComm>(s, std::move(comm), cache);
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
