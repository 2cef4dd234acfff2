#include "src/cli/plan_report.hpp"

#include <algorithm>
#include <cstdio>

#include "src/cli/progress.hpp"
#include "stepsim/workload/comm_model.hpp"

namespace stepsim::cli {
namespace {

using plan::Candidate;
using plan::Outcome;

constexpr double kGB = 1e9;
// The groups the table shows exposed time of, in its column order.
constexpr workload::CommGroup kShown[] = {workload::CommGroup::kTp, workload::CommGroup::kPp,
                                          workload::CommGroup::kDp, workload::CommGroup::kEp,
                                          workload::CommGroup::kCp};

double exposed(const Outcome& o, workload::CommGroup g) {
  return o.exposed_s[static_cast<std::size_t>(g)];
}

// The numbers a row shows: the confirmed ones when it was confirmed.
const Outcome& shown(const Candidate& c) {
  return c.confirmed ? c.confirm : c.analytical;
}

void print_header(bool confirmed) {
  std::printf("%-5s %-44s %9s %9s %11s %7s %10s %10s %10s %10s %10s %10s %10s", "rank", "layout",
              "mem_GB", "free_GB", "step", "MFU_%", "tok/s/GPU", "exp_tp", "exp_pp", "exp_dp",
              "exp_ep", "exp_cp", "bubble");
  if (confirmed) std::printf("  %-8s %11s", "analyt.", "analyt_step");
  std::printf("\n");
}

void print_row(const Candidate& c, int rank, bool confirmed) {
  const Outcome& o = shown(c);
  std::printf("%-5d %-44s %9.2f %9.2f %11s %7.2f %10.4g", rank, plan::layout_text(c.layout).c_str(),
              c.memory_peak / kGB, (c.capacity - c.memory_peak) / kGB, sim_text(o.step_s).c_str(),
              o.mfu * 100, o.tokens_per_s_per_gpu);
  for (workload::CommGroup g : kShown) std::printf(" %10s", sim_text(exposed(o, g)).c_str());
  std::printf(" %10s", sim_text(o.bubble_s).c_str());
  if (confirmed) {
    std::printf("  #%-7d %11s", c.rank, sim_text(c.analytical.step_s).c_str());
  }
  std::printf("\n");
}

// How the confirmed order differs from the analytical one.
void print_differences(const PlanSearch& p) {
  std::vector<const Candidate*> conf;
  for (const Candidate& c : p.rows) {
    if (c.confirmed) conf.push_back(&c);
  }
  if (conf.empty()) return;
  std::sort(conf.begin(), conf.end(), [](const Candidate* a, const Candidate* b) {
    return a->confirmed_rank < b->confirmed_rank;
  });
  bool same = true;
  for (const Candidate* c : conf) same = same && c->confirmed_rank == c->rank;
  std::printf("# confirmed against analytical (%s fidelity)\n", p.confirm.c_str());
  if (same) {
    std::printf("ranking              the same order as at analytical fidelity\n");
  } else {
    std::printf("ranking              changed:");
    for (const Candidate* c : conf) {
      if (c->confirmed_rank != c->rank) {
        std::printf(" analytical #%d -> #%d;", c->rank, c->confirmed_rank);
      }
    }
    std::printf("\n");
  }
  for (const Candidate* c : conf) {
    const double d = c->analytical.step_s > 0 ? c->confirm.step_s / c->analytical.step_s - 1 : 0;
    std::printf("#%-3d %-44s step %s at %s, %+.2f %% against analytical (%s)\n", c->confirmed_rank,
                plan::layout_text(c->layout).c_str(), sim_text(c->confirm.step_s).c_str(),
                p.confirm.c_str(), d * 100, sim_text(c->analytical.step_s).c_str());
  }
}

void outcome_json(nlohmann::json& j, const std::string& prefix, const Outcome& o) {
  j[prefix + "step_s"] = o.step_s;
  j[prefix + "mfu"] = o.mfu;
  j[prefix + "tokens_per_s_per_gpu"] = o.tokens_per_s_per_gpu;
  j[prefix + "compute_s"] = o.compute_s;
  for (workload::CommGroup g : kShown) {
    j[prefix + "exposed_" + workload::comm_group_name(g) + "_s"] = exposed(o, g);
  }
  j[prefix + "bubble_s"] = o.bubble_s;
}

nlohmann::ordered_json row_json(const Candidate& c, const std::string& confirm) {
  nlohmann::ordered_json j;
  const plan::Layout& l = c.layout;
  j["rank"] = c.rank;
  j["confirmed_rank"] = c.confirmed_rank;
  j["layout"] = plan::layout_text(l);
  j["tp"] = l.tp;
  j["pp"] = l.pp;
  j["vpp"] = l.vpp;
  j["cp"] = l.cp;
  j["ep"] = l.ep;
  j["dp"] = l.dp;
  j["micro_batch"] = l.micro_batch;
  j["global_batch"] = l.global_batch;
  j["zero"] = l.zero;
  j["recompute"] = l.recompute;
  j["tp_overlap"] = l.tp_overlap;
  j["fits"] = c.fits;
  j["memory_peak_gb"] = c.memory_peak / kGB;
  j["capacity_gb"] = c.capacity / kGB;
  j["headroom_gb"] = (c.capacity - c.memory_peak) / kGB;
  j["peak_stage"] = c.peak_stage;
  j["largest_term"] = c.largest_term;
  j["scored"] = c.scored;
  nlohmann::json a;
  outcome_json(a, "", c.analytical);
  for (auto it = a.begin(); it != a.end(); ++it) {
    j[it.key()] = c.scored ? it.value() : nlohmann::json(nullptr);
  }
  j["pruned"] = c.pruned;
  j["step_bound_s"] = c.bound_step_s > 0 ? nlohmann::json(c.bound_step_s) : nlohmann::json(nullptr);
  j["confirmed"] = c.confirmed;
  j["confirm_fidelity"] = c.confirmed ? confirm : "";
  nlohmann::json b;
  outcome_json(b, "confirmed_", c.confirm);
  for (auto it = b.begin(); it != b.end(); ++it) {
    j[it.key()] = c.confirmed ? it.value() : nlohmann::json(nullptr);
  }
  return j;
}

}  // namespace

void rank_rows(PlanSearch& p) {
  const std::string obj = p.objective;
  std::vector<std::size_t> order(p.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto better = [&](std::size_t a, std::size_t b) {
    const Candidate& x = p.rows[a];
    const Candidate& y = p.rows[b];
    const bool rx = x.fits && x.scored;
    const bool ry = y.fits && y.scored;
    if (rx != ry) return rx;
    if (rx) {
      const double ox = plan::objective(x.analytical, obj);
      const double oy = plan::objective(y.analytical, obj);
      if (ox != oy) return ox > oy;
      if (x.memory_peak != y.memory_peak) return x.memory_peak < y.memory_peak;
    } else if (x.scored != y.scored) {
      return x.scored;  // --prune: the unscored after the scored
    } else if (x.analytical.step_s != y.analytical.step_s) {
      return x.analytical.step_s < y.analytical.step_s;
    }
    return a < b;
  };
  std::stable_sort(order.begin(), order.end(), better);
  std::vector<Candidate> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) sorted.push_back(p.rows[i]);
  p.rows = std::move(sorted);
  int rank = 0;
  for (Candidate& c : p.rows) c.rank = c.fits && c.scored ? ++rank : 0;
  std::vector<Candidate*> conf;
  for (Candidate& c : p.rows) {
    if (c.confirmed) conf.push_back(&c);
  }
  std::stable_sort(conf.begin(), conf.end(), [&](const Candidate* a, const Candidate* b) {
    return plan::objective(a->confirm, obj) > plan::objective(b->confirm, obj);
  });
  for (std::size_t i = 0; i < conf.size(); ++i) conf[i]->confirmed_rank = static_cast<int>(i + 1);
}

std::string commonest_unfit(const PlanSearch& p) {
  if (p.unfit_terms.empty()) return "none";
  auto best = p.unfit_terms.begin();
  for (auto it = p.unfit_terms.begin(); it != p.unfit_terms.end(); ++it) {
    if (it->second > best->second) best = it;
  }
  return "the peak stage's largest term " + best->first + " (" + std::to_string(best->second) +
         " layouts)";
}

void print_plan(const PlanSearch& p) {
  std::printf("# stepsim plan %s: %s on %s, %d GPUs %s (%.1f GB HBM), objective %s, confirm %s\n",
              p.scenario.c_str(), p.model.c_str(), p.topology.c_str(), p.gpus, p.gpu.c_str(),
              p.capacity / kGB, p.objective.c_str(), p.confirm.c_str());
  if (p.interrupted) {
    std::printf("# status: INTERRUPTED (%zu of %zu layouts looked at; the rows below cover them)\n",
                p.done, p.enumerated);
  }
  std::size_t ranked = 0;
  for (const Candidate& c : p.rows) ranked += c.rank > 0 ? 1 : 0;
  std::printf("layouts              %zu enumerated, %zu not valid, %zu do not fit, %zu ranked\n",
              p.enumerated, p.invalid, p.unfit, ranked);
  if (p.unfit > 0) std::printf("do not fit           commonest: %s\n", commonest_unfit(p).c_str());
  if (p.invalid > 0) std::printf("not valid            e.g. %s\n", p.invalid_example.c_str());
  std::size_t scored = 0;
  for (const Candidate& c : p.rows) scored += c.scored ? 1 : 0;
  const double per_min =
      p.analytical_wall_s > 0 ? 60.0 * static_cast<double>(scored) / p.analytical_wall_s : 0;
  std::printf("analytical           %zu layouts scored in %.2f s (%.0f per minute)\n", scored,
              p.analytical_wall_s, per_min);
  if (p.prune) {
    std::printf(
        "pruned               %zu layouts that fit not scored: their step bound cannot "
        "reach the best %d\n",
        p.pruned, p.top);
  }
  if (p.confirmed > 0) {
    std::printf("confirmed            %zu at %s fidelity in %.2f s\n", p.confirmed,
                p.confirm.c_str(), p.confirm_wall_s);
  }
  const bool confirmed = p.confirmed > 0;
  std::printf("# best %d by %s%s\n", p.top, p.objective == "mfu" ? "MFU" : "tokens/s per GPU",
              confirmed
                  ? (" at " + p.confirm + " fidelity (analytical rank and step beside)").c_str()
                  : " at analytical fidelity");
  print_header(confirmed);
  std::vector<const Candidate*> best;
  for (const Candidate& c : p.rows) {
    if (confirmed ? c.confirmed : (c.rank > 0 && c.rank <= p.top)) best.push_back(&c);
  }
  if (confirmed) {
    std::sort(best.begin(), best.end(), [](const Candidate* a, const Candidate* b) {
      return a->confirmed_rank < b->confirmed_rank;
    });
  }
  for (const Candidate* c : best) print_row(*c, confirmed ? c->confirmed_rank : c->rank, confirmed);
  if (best.empty()) std::printf("(no layout fits)\n");
  print_differences(p);
  if (p.own_found) {
    int own_rank = 0;
    bool exact = true;  // --prune: a pruned layout may rank above one below the threshold
    for (const Candidate& c : p.rows) {
      if (c.layout != p.own) continue;
      own_rank = c.rank;
      exact = p.pruned == 0 || plan::objective(c.analytical, p.objective) >= p.prune_threshold;
    }
    const std::string r = std::to_string(own_rank);
    std::printf("scenario's layout    %s: %s\n", plan::layout_text(p.own).c_str(),
                own_rank == 0 ? "does not fit"
                : exact       ? ("rank " + r + " at analytical fidelity").c_str()
                              : ("rank " + r +
                           " or below at analytical fidelity (of the scored; pruned layouts may "
                                 "rank above it)")
                              .c_str());
  } else {
    std::printf("scenario's layout    %s: not among the searched layouts\n",
                plan::layout_text(p.own).c_str());
  }
}

std::string plan_csv(const PlanSearch& p) {
  std::string out;
  bool header = false;
  for (const Candidate& c : p.rows) {
    const nlohmann::ordered_json j = row_json(c, p.confirm);
    if (!header) {
      std::string h;
      for (auto it = j.begin(); it != j.end(); ++it) h += (h.empty() ? "" : ",") + it.key();
      out += h + "\n";
      header = true;
    }
    std::string line;
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) line += ",";
      first = false;
      if (it->is_string()) {
        line += it->get<std::string>();
      } else if (!it->is_null()) {
        line += it->dump();
      }
    }
    out += line + "\n";
  }
  return out;
}

nlohmann::json plan_json(const PlanSearch& p) {
  nlohmann::json j;
  j["command"] = "plan";
  j["scenario"] = p.scenario;
  j["model"] = p.model;
  j["topology"] = p.topology;
  j["gpus"] = p.gpus;
  j["gpu"] = p.gpu;
  j["capacity_gb"] = p.capacity / kGB;
  j["objective"] = p.objective;
  j["confirm"] = p.confirm;
  j["complete"] = !p.interrupted;
  j["enumerated"] = p.enumerated;
  j["looked_at"] = p.done;
  j["invalid"] = p.invalid;
  j["unfit"] = p.unfit;
  j["unfit_commonest"] = commonest_unfit(p);
  j["prune"] = p.prune;
  j["pruned"] = p.pruned;
  j["analytical_wall_s"] = p.analytical_wall_s;
  j["confirm_wall_s"] = p.confirm_wall_s;
  j["own_layout"] = plan::layout_text(p.own);
  j["layouts"] = nlohmann::json::array();
  for (const Candidate& c : p.rows) {
    j["layouts"].push_back(nlohmann::json::parse(row_json(c, p.confirm).dump()));
  }
  return j;
}

}  // namespace stepsim::cli
