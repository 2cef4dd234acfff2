// `stepsim plan`'s analytical pass (see plan_scoring.hpp).
#include "src/cli/plan_scoring.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "src/plan/plan_search.hpp"
#include "src/plan/step_bound.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/workload/comm_model.hpp"

namespace stepsim::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The objective of the `top`-th best distinct step among the layouts scored so far (each set of
// same_step twins counted once, as the confirmation picks them); -infinity until there are
// `top`. It only grows as layouts are added.
class TopThreshold {
 public:
  TopThreshold(int top, std::string objective) : top_(top), objective_(std::move(objective)) {}
  void add(const plan::Candidate& c) {
    if (!c.fits || !c.scored) return;
    const plan::Layout& l = c.layout;
    if (!steps_
             .emplace(l.tp, l.pp, l.vpp, l.cp, l.ep, l.etp, l.dp, l.micro_batch, l.global_batch,
                      c.analytical.step_s)
             .second) {
      return;  // a twin: its step (hence its objective) is one already counted
    }
    best_.push(plan::objective(c.analytical, objective_));
    if (static_cast<int>(best_.size()) > top_) best_.pop();
  }
  [[nodiscard]] double value() const {
    return static_cast<int>(best_.size()) < top_ ? -std::numeric_limits<double>::infinity()
                                                 : best_.top();
  }

 private:
  int top_;
  std::string objective_;
  std::set<std::tuple<int, int, int, int, int, int, int, std::int64_t, std::int64_t, double>>
      steps_;
  std::priority_queue<double, std::vector<double>, std::greater<>> best_;  // the top_ largest
};

Result<bool> score(const workload::Scenario& s, const topology::Topology& topo,
                   const std::shared_ptr<workload::AnalyticalCache>& cache, plan::Candidate& c) {
  auto o = plan::run_analytical(s, topo, cache);
  if (!o) return Error{"layout " + plan::layout_text(c.layout) + ": " + o.error().message};
  c.analytical = *o;
  c.scored = true;
  return true;
}

}  // namespace

bool stop_agreed(int ranks) {
  int stop = pdes::Engine::stop_requested() ? 1 : 0;
  if (ranks > 1) MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return stop != 0;
}

bool same_step(const plan::Candidate& a, const plan::Candidate& b) {
  const plan::Layout& x = a.layout;
  const plan::Layout& y = b.layout;
  return x.tp == y.tp && x.pp == y.pp && x.vpp == y.vpp && x.cp == y.cp && x.ep == y.ep &&
         x.etp == y.etp && x.dp == y.dp && x.micro_batch == y.micro_batch &&
         x.global_batch == y.global_batch && a.analytical.step_s == b.analytical.step_s;
}

Result<bool> search_analytical(const workload::Scenario& base, const topology::Topology& topo,
                               const std::vector<plan::Layout>& layouts, const ScoringOptions& opt,
                               const PlanTick& tick, PlanSearch& p) {
  const auto t0 = Clock::now();
  const auto cache = workload::make_analytical_cache(topo);
  std::size_t fit = 0;
  // Every layout: validate(), the memory, the bound; without pruning, the step too.
  for (const plan::Layout& l : layouts) {
    if (p.done % 32 == 0 && stop_agreed(opt.ranks)) {
      p.interrupted = true;
      break;
    }
    ++p.done;
    auto s = plan::layout_scenario(base, topo, l);
    if (!s) {
      if (p.invalid++ == 0) p.invalid_example = plan::layout_text(l) + ": " + s.error().message;
      continue;
    }
    plan::Candidate c;
    c.layout = l;
    plan::add_memory(*s, c);
    fit += c.fits ? 1 : 0;
    if (!c.fits) {
      ++p.unfit;
      ++p.unfit_terms[c.largest_term];
    }
    if (opt.prune) {
      c.bound_step_s = plan::step_lower_bound(*s);
    } else if (auto ok = score(*s, topo, cache, c); !ok) {
      return ok;
    }
    if (l == p.own) p.own_found = true;
    p.rows.push_back(std::move(c));
    if (tick) tick(p.done, layouts.size(), fit);
  }
  if (opt.prune && !p.interrupted) {
    // The layouts that fit (and the scenario's own), best bound first.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < p.rows.size(); ++i) {
      if (p.rows[i].fits || p.rows[i].layout == p.own) order.push_back(i);
    }
    std::vector<double> ub(p.rows.size(), 0.0);
    for (std::size_t i : order) {
      auto s = plan::layout_scenario(base, topo, p.rows[i].layout);
      if (!s) return s.error();
      // No bound (0: a schedule the bound does not follow): never pruned.
      const double b = p.rows[i].bound_step_s;
      ub[i] = b > 0 ? plan::objective(plan::bound_outcome(*s, b), opt.objective)
                    : std::numeric_limits<double>::infinity();
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return ub[a] > ub[b]; });
    TopThreshold threshold(opt.top, opt.objective);
    std::size_t scored = 0;
    for (std::size_t i : order) {
      plan::Candidate& c = p.rows[i];
      const bool own = c.layout == p.own;
      if (ub[i] < threshold.value() && !own) {
        c.pruned = true;
        ++p.pruned;
        continue;
      }
      if (scored % 32 == 0 && stop_agreed(opt.ranks)) {
        p.interrupted = true;
        break;
      }
      auto s = plan::layout_scenario(base, topo, c.layout);
      if (!s) return s.error();
      if (opt.price_collectives && c.bound_step_s > 0 && !own && std::isfinite(threshold.value())) {
        // The compute bound can reach the best --top: add the collectives the layers always
        // leave exposed, priced by the model that scores (too dear to price for every layout).
        const auto comm = workload::make_analytical_comm(topo, *s, cache);
        c.bound_step_s = std::max(c.bound_step_s, plan::step_lower_bound(*s, comm.get()));
        if (plan::objective(plan::bound_outcome(*s, c.bound_step_s), opt.objective) <
            threshold.value()) {
          c.pruned = true;
          ++p.pruned;
          continue;
        }
      }
      if (auto ok = score(*s, topo, cache, c); !ok) return ok;
      ++scored;
      threshold.add(c);
      if (tick) tick(scored, order.size(), fit);
    }
    p.prune_threshold = threshold.value();
  }
  p.analytical_wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return true;
}

}  // namespace stepsim::cli
