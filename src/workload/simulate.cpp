// The step's front door (simulate.hpp): the executor, the comm models and the whole step's
// background ends, then run_step or run_whole_step.
#include "stepsim/workload/simulate.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/workload/whole_step/whole_step.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {

StepExecution step_execution(const Scenario& s) {
  StepExecution e;
  e.whole = runs_whole_step(s);
  return e;
}

std::unique_ptr<CommModel> fidelity_comm_model(const topology::Topology& topo, const Scenario& s,
                                               pdes::Sync& sync, const pdes::EngineOptions& engine,
                                               std::unique_ptr<CommModel> ideal) {
  const std::string& f = s.fidelity;
  if (f == "packet" || f == "cell") return make_packet_comm(topo, s, sync, engine);
  if (f == "analytical") return make_analytical_comm(topo, s);
  return ideal != nullptr ? std::move(ideal) : make_ideal_comm(topo, s);
}

Result<StepResult> simulate_step(const Scenario& s, const topology::Topology& topo,
                                 pdes::Sync& sync, StepRequest req) {
  // Several jobs: the first job's scenario stands for the run where one is needed (the folded
  // collectives' TP/CP copies).
  const Scenario first = s.jobs.empty() ? s : job_scenario(s, 0);
  auto comm = fidelity_comm_model(topo, first, sync, req.engine, std::move(req.ideal));
  if (!step_execution(first).whole) return run_step(s, topo, *comm, req.on_pass);
  // Several jobs: each job's own model for its collectives inside a server. A model keeps a
  // reference to its scenario: the job scenarios live until the step is done.
  std::vector<std::unique_ptr<Scenario>> jobs;
  std::vector<std::unique_ptr<CommModel>> job_comms;
  std::vector<CommModel*> folded{comm.get()};
  for (std::size_t k = 1; k < s.jobs.size(); ++k) {
    jobs.push_back(std::make_unique<Scenario>(job_scenario(s, k)));
    job_comms.push_back(fidelity_comm_model(topo, *jobs.back(), sync, req.engine));
    folded.push_back(job_comms.back().get());
  }
  Scenario whole = s;
  bool past = false;  // an UNTIL past the ideal step's estimate, the default (up to it the
                      // background ends about when the step does)
  for (auto& bg : whole.background) {
    if (bg.until == SimTime::never()) bg.until = req.background_until;
    past = past || bg.until > req.background_until;
  }
  SimTime cut = SimTime::never();
  if (past) {
    // A first run finds the step's end; the background stops there in the step's run (the
    // step ends at the same time: nothing after it changes what came before).
    auto end = whole_step_end(whole, topo, folded, sync, req.step_engine);
    if (!end) return end.error();
    if (*end) {
      cut = **end;
      for (auto& bg : whole.background) bg.until = std::min(bg.until, cut);
    }
  }
  auto r = run_whole_step(whole, topo, folded, sync, std::move(req.step_engine), {}, req.samples,
                          req.foldable, req.trace ? &req.trace_gpus : nullptr);
  if (!r) return r.error();
  StepResult out = std::move(r).value();
  if (cut != SimTime::never()) out.background_cut_s = cut.seconds();
  return out;
}

}  // namespace stepsim::workload
