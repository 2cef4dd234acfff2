#pragma once
// How much of a whole step's work is done by a simulated time: the progress fraction of
// `stepsim run` (the whole step) at packet or cell fidelity. Events there grow with the
// bytes that cross the network (a collective inside one server is folded into a memoized cost and
// costs almost no events), and those bytes are uneven over simulated time: the data-parallel
// gradient reduction at the end of the step carries most of them. So the fraction counts the
// network bytes the step moves by time t at ideal fidelity (each collective spanning servers moves
// its bus bytes, nccl-tests' busbw_factor x S, linearly over its ideal [start, end]), plus a small
// share for simulated time itself so that it keeps moving through compute-only stretches.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::cli {

/// The network bytes of a step at ideal fidelity against simulated time, W(t), and the work
/// fraction f(t) = (1 - s) W(t) / W + s t / E, s = kTimeShare, where W is every byte the step
/// moves and E the end of its work: the larger of T, the ideal step time, and the last
/// collective's end (the parameter all-gathers that overlap the next step's forward pass end
/// after T, and the whole step simulates them). f = t / E when no collective crosses servers.
/// Monotone in t; 1 at E; above 1 after it (a slower step).
class WorkCurve {
 public:
  /// The share of simulated time in the fraction.
  static constexpr double kTimeShare = 0.05;

  /// One collective: its network bytes (0 inside one server) over its ideal [start_s, end_s].
  struct Span {
    double start_s = 0;
    double end_s = 0;
    double bytes = 0;
  };

  /// Adds a collective.
  void add(const Span& s);
  /// Adds a job's collectives at ideal fidelity (StepResult::colls, as run_step reports them for
  /// one GPU per stage): `cross[i]` says whether colls[i] spans more than one server; each counts
  /// busbw_factor x bytes x `copies` (the job's GPUs per stage: the copies of the reference
  /// pipeline's collectives). Returns false (adds nothing) if the sizes differ.
  bool add_job(const std::vector<workload::CollectiveRecord>& colls, const std::vector<bool>& cross,
               double copies);
  /// Ends the additions; `step_s`: T, the step time at ideal fidelity (> 0).
  void finish(double step_s);

  /// The fraction of the step's work done at simulated time `t_s` (after finish()).
  [[nodiscard]] double fraction(double t_s) const;
  /// The same with the network bytes the run has actually delivered by `t_s` (counted like W:
  /// each GPU's bytes in the collectives' completed sends): the larger of fraction(t_s) and
  /// (1 - s) delivered / W + s t / E. A run reaches a phase at a simulated time a little apart
  /// from the ideal run's, and where W is steep (the data-parallel reduction, most of the bytes,
  /// while simulated time barely moves) fraction(t) alone stays put; the delivered bytes move.
  /// Monotone in both arguments.
  [[nodiscard]] double fraction(double t_s, double delivered_bytes) const;
  /// W: the network bytes of the step (its collectives' across servers, all of them).
  [[nodiscard]] double network_bytes() const { return total_; }
  /// E: when the step's work ends at ideal fidelity (>= T).
  [[nodiscard]] double end_s() const { return end_; }

 private:
  [[nodiscard]] double bytes_at(double t_s) const;  // W(t)

  std::vector<Span> spans_;
  double end_ = 0;    // E
  double total_ = 0;  // W
  // W as a piecewise linear function: its value at each breakpoint (increasing times); a
  // breakpoint may repeat a time (a collective of zero length: a jump).
  std::vector<double> times_;
  std::vector<double> values_;
};

/// A comm model that forwards to another and notes, for each collective it costs, whether its
/// GPUs span more than one server (the whole step's rule for folding: `every GPU in one server`,
/// by collective::make_communicator's servers). run_step costs each recorded collective once, in
/// order, so `cross` lines up with StepResult::colls (WorkCurve::add_job checks the sizes).
class CrossServerRecorder final : public workload::CommModel {
 public:
  CrossServerRecorder(const topology::Topology& topo, workload::CommModel& inner)
      : topo_(topo), inner_(inner) {}
  Result<workload::CommCost> cost(const workload::CommOp& op) override;
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] bool wants_all_ops() const override { return inner_.wants_all_ops(); }
  Result<bool> prepare(const std::vector<workload::CommOp>& ops) override {
    return inner_.prepare(ops);
  }
  std::vector<bool> cross;

 private:
  const topology::Topology& topo_;
  workload::CommModel& inner_;
  std::map<std::vector<std::uint32_t>, bool> seen_;  // GPUs -> spans servers
};

}  // namespace stepsim::cli
