#pragma once
// The steps of make_plan (plan.cpp) that live in their own files: the RC connections, the
// background flows and the folded collectives' costs (connections.cpp), and step.fold rails
// (rail_fold.cpp). Each adds to a plan whose jobs, GPUs and communicators are placed.

#include <vector>

#include "src/workload/whole_step/plan.hpp"

namespace stepsim::workload::whole_step {

/// Every communicator's Communicator, and every network communicator's RC connections: the
/// most any of its collectives asks for between each pair of NICs, in a deterministic order.
Result<bool> build_connections(StepPlan& p, const Scenario& s, const topology::Topology& topo);
/// Background traffic: each pattern's flows, one connection each.
Result<bool> build_background(StepPlan& p, const Scenario& s, const topology::Topology& topo);
/// The memoized cost of every folded collective, by (job, kind, bytes, GPUs).
Result<bool> cost_folded(StepPlan& p, const std::vector<CommModel*>& models);
/// step.fold rails: folds the rails or refuses with the reason; step.fold none: sets
/// p.foldable to what step.fold rails would fold and leaves every GPU running.
Result<bool> fold(StepPlan& p, const Scenario& s, const topology::Topology& topo);

}  // namespace stepsim::workload::whole_step
