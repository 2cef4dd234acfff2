#pragma once
// What `stepsim plan` reports: the search's counts and rows, the ranked text table, how the
// confirmed ranking differs from the analytical one, the CSV (every layout a row) and the JSON.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/plan/plan_search.hpp"

namespace stepsim::cli {

/// The search: every valid layout evaluated so far, and what was dropped.
struct PlanSearch {
  std::string scenario;
  std::string model;
  std::string topology;
  std::string gpu;
  int gpus = 0;
  double capacity = 0;
  std::string objective;
  std::string confirm;
  int top = 5;
  std::vector<plan::Candidate> rows;               ///< in enumeration order until ranked
  std::size_t enumerated = 0;                      ///< candidate layouts
  std::size_t done = 0;                            ///< candidates looked at
  std::size_t invalid = 0;                         ///< refused by validate()
  std::string invalid_example;                     ///< the first refusal's message
  std::size_t unfit = 0;                           ///< valid but over the GPU's memory
  std::map<std::string, std::size_t> unfit_terms;  ///< the peak stage's largest term -> count
  double analytical_wall_s = 0;
  double confirm_wall_s = 0;
  std::size_t confirmed = 0;
  bool prune = false;          ///< --prune: layouts whose bound cannot reach the best --top skipped
  std::size_t pruned = 0;      ///< layouts that fit but were not scored (their bound is below)
  double prune_threshold = 0;  ///< the objective of the --top-th best distinct step
  bool interrupted = false;
  bool own_found = false;  ///< the scenario's own layout is one of the rows
  plan::Layout own;        ///< the scenario's own layout
};

/// Ranks the rows: those that fit and were scored by the analytical objective (then the lower
/// memory peak, then enumeration order) get rank 1..; the confirmed ones their confirmed_rank;
/// `rows` is then in report order (ranked, then the rest by step time).
void rank_rows(PlanSearch& p);

/// The commonest reason a layout did not fit: "optimizer_states (1,234 layouts)".
std::string commonest_unfit(const PlanSearch& p);

/// The text report on stdout.
void print_plan(const PlanSearch& p);

/// Every row as CSV text.
std::string plan_csv(const PlanSearch& p);

/// The report as JSON (the rows too).
nlohmann::json plan_json(const PlanSearch& p);

}  // namespace stepsim::cli
