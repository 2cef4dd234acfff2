#pragma once
// The memoized step executor (the only StepExecutor so far): every stage of the simulated
// pipeline runs its stage program (stage_program.hpp: the same list of ops the whole step runs,
// built for ProgramUse::kMemoized) on its own clocks (a compute stream and a data-parallel
// stream), and each collective takes what the CommModel says, whatever else runs at that
// moment. Its trace goes to summarize_step. Modelling choices, each stated once:
// - TP, CP and EP collectives block the compute stream. Pipeline sends are asynchronous: the
//   receiver waits for the data, the sender does not wait for the receiver.
// - Data parallelism: gradients fill buckets as the last micro-batch's backward passes each
//   layer (parallel.overlap_grad_reduce) and the buckets are reduced one after another on the
//   data-parallel stream; the optimizer starts when they are done. ZeRO 1/2 all-gathers the
//   updated parameters after the optimizer, hidden behind the next step's first forward pass
//   (parallel.overlap_param_gather) up to that pass's length. FSDP (ZeRO 3) gathers each
//   layer's parameters on that stream one layer ahead of the compute.
// - Expert (MoE) gradients are reduced over the expert-data-parallel group (dp / ep ranks).
// - Full recomputation adds a forward (and its TP collectives) to every backward, selective
//   recomputation the attention core.
// The stages run in turn, each as far as its next pass's inputs allow, until every stage is
// through its passes; then each stage's tail (the last buckets, the optimizer, the parameter
// gathers), stage after stage. A pipeline send is costed (on the sender's stage) when its
// receiver takes it.

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "src/workload/memoized_comm.hpp"
#include "src/workload/moe/ep_overlap.hpp"
#include "src/workload/step_executor.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/stage_program.hpp"
#include "stepsim/workload/step_summary.hpp"

namespace stepsim::workload {

class MemoizedExecutor final : public StepExecutor {
 public:
  /// The executor of `s`'s step (which passed validate()), costing collectives with `comm`;
  /// `progress` may be empty.
  /// `records` false: the trace keeps the stages' times and the distinct collectives but no op
  /// or collective records (a listing pass, the planner's scoring).
  MemoizedExecutor(const Scenario& s, CommModel& comm, Progress progress, bool records = true);

  /// Runs every stage's schedule, then the data-parallel tail, the optimizer and the parameter
  /// gather (once).
  Result<StepTrace> run() override;

 private:
  // A collective the executor builds once and asks for again and again (a layer's TP/CP/EP
  // collectives, a pipeline send, FSDP's gather): after the first time, its cost and its index
  // among the distinct collectives are kept beside it, so a repeat costs no lookup by GPU list.
  // The comm models memoize by (kind, size, GPUs), so the kept cost is the one they would give.
  struct StableOp {
    CommOp op;
    bool known = false;
    CommCost cost;
    std::uint32_t distinct = 0;
    bool free = false;  // nothing to move (is_free): never costed, never recorded
    // Known (or free): what blocking() leaves exposed after Megatron's TP overlap with nothing
    // beside it, overlapped_seconds(cost, overlap_s, overlap_chunks) - overlap_s.
    double after_overlap = 0;
  };
  // Where one stage's streams are in its program (StageProgramStream: the ops of the pass or
  // pair it runs; the stage's collectives and data-parallel stream so far).
  struct Stage {
    StageProgram* prog = nullptr;
    std::vector<StableOp> repeated;  // prog->comm_ops[0...prog->repeated), built once
    std::size_t pc = 0;              // the next op of prog->ops
    bool passes_done = false;        // the stream has no pass left
    StageTime time;                  // time.t: the compute stream
    double dp_free = 0;              // when the data-parallel stream is free
    std::size_t dp_next = 0;         // the next op of prog->dp to start
    std::vector<double> dp_end;      // when each started op of prog->dp is done
    double pass_start = 0;           // the running pass's start (after its input is in)
    double first_fwd_s = -1;         // the first forward pass (what hides the parameter gather)
  };
  // What run_group did.
  enum class Group : std::uint8_t { kBlocked, kRan, kEnd, kDone };

  Result<bool> run_schedules();
  Result<Group> run_group(int st, double end);
  Result<bool> run_op(int st, const StageOp& op);
  Result<bool> run_tail(int st);
  Result<bool> release_dp(int st, std::uint32_t upto);
  Result<bool> param_gather(int st, std::uint32_t upto);
  bool input_known(const StageOp& recv);
  Result<double> input_ready(int st, const StageOp& recv);
  void wait_until(int st, const StageOp& pass, double ready);
  void compute(int st, const StageOp& op);
  Result<double> run_comm(int st, const CommOp& op, double start);
  Result<double> run_comm(int st, StableOp& op, double start);
  void record(int st, const CommOp& op, double start, const CommCost& c, std::uint32_t distinct);
  std::uint32_t distinct_index(const CommOp& op, const CommCost& c, std::uint32_t id);
  Result<bool> blocking(int st, StableOp& op, const OpRecord& base, double beside_s = 0);
  void blocking_known(int st, StableOp& op);
  StableOp& pipeline_send(int from, int to);
  Error interrupt();
  void reserve_records();
  void add_op(const OpRecord& r) {
    if (records_) trace_.ops.push_back(r);
  }

  double& finished(PassKind kind, int st, std::uint32_t c, std::uint32_t mb);

  const Scenario& s_;
  CommModel& comm_;
  Progress progress_;
  bool records_;
  bool repeats_free_;          // comm_.repeats_free()
  std::uint32_t next_id_ = 0;  // the next collective record's id (kept or not)
  PipelineShape shape_;
  Placement place_;
  std::int64_t send_bytes_ = 0;                    // one pipeline send
  EpOverlap ep_overlap_;                           // moe.overlap
  StageProgramStream programs_;                    // ProgramUse::kMemoized
  std::map<std::pair<int, int>, StableOp> sends_;  // pipeline sends by (from, to) stage
  std::vector<Stage> stages_;
  // Completion (arrival at the consumer excluded) of each forward and backward pass, by stage,
  // chunk and micro-batch; -1 before it ran.
  std::vector<double> fin_[2];
  std::map<CollectiveKey, std::uint32_t> distinct_;  // index into trace_.distinct
  RecentCollectives<std::uint32_t> recent_;          // the last few of distinct_
  StepTrace trace_;
  bool reserved_ = false;  // reserve_records() ran
};

}  // namespace stepsim::workload
