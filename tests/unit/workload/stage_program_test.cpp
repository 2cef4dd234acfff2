// The stage program: the step's schedule written once, run by both executors. Its passes are
// the pipeline schedule's (every micro-batch's forward before its backward, passes per stage =
// 2 x micro-batches x chunks), its receives match the other stages' sends, the stream gives the
// same ops as the whole build, and the memoized step prices exactly the program's compute ops
// and collectives.
#include "stepsim/workload/stage_program.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "src/workload/memoized_comm.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

// tiny.yaml (4 layers, TP 4, PP 2, DP 2) with `sets`.
Scenario sp_tiny(const std::vector<std::string>& sets) {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

// An interleaved pipeline: 8 layers on PP 4 x VPP 2, TP 2, 8 micro-batches.
Scenario sp_interleaved(const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets = {"parallel.tp=2",
                                   "parallel.pp=4",
                                   "parallel.vpp=2",
                                   "model.layers=8",
                                   "parallel.global_batch=16",
                                   "fidelity=analytical"};
  sets.insert(sets.end(), more.begin(), more.end());
  return sp_tiny(sets);
}

// A tiny MoE (8 experts) on PP 4, EP 2, with moe.overlap `overlap`.
Scenario sp_moe(const std::string& overlap) {
  return sp_tiny({"model.experts=8", "model.top_k=2", "model.ffn=1024", "model.layers=8",
                  "parallel.tp=1", "parallel.pp=4", "parallel.ep=2", "parallel.global_batch=32",
                  "parallel.zero=0", "fidelity=analytical", "moe.overlap=" + overlap});
}

// The scenarios every property is checked on.
std::vector<std::pair<std::string, Scenario>> sp_cases() {
  return {
      {"1f1b", sp_tiny({"fidelity=analytical"})},
      {"interleaved", sp_interleaved()},
      {"interleaved zero 3 full", sp_interleaved({"parallel.zero=3", "parallel.recompute=full"})},
      {"zero 2 tp_overlap", sp_interleaved({"parallel.zero=2", "parallel.tp_overlap=true",
                                            "parallel.overlap_grad_reduce=false"})},
      {"moe 1f1b", sp_moe("1f1b")},
      {"dualpipe", sp_moe("dualpipe")}};
}

using SpPassKey = std::tuple<int, std::uint32_t, std::uint32_t, int>;  // kind, chunk, micro, grad

// Whether the whole step takes `s` (validate refuses moe.overlap 1f1b on PP without VPP there:
// its pairs would run a backward before its own forward's end on the last stage).
bool sp_whole_ok(const Scenario& s) {
  Scenario w = s;
  w.step_mode = "whole";
  w.fidelity = "cell";
  const auto topo = topology::load_topology(w.topology).value();
  return validate(w, topo).ok();
}

// The uses of a program `s` can have.
std::vector<ProgramUse> sp_uses(const Scenario& s) {
  if (!sp_whole_ok(s)) return {ProgramUse::kMemoized};
  return {ProgramUse::kWholeStep, ProgramUse::kMemoized};
}

SpPassKey sp_key(const StageOp& op) {
  return {static_cast<int>(op.pass), op.chunk, op.micro, static_cast<int>(op.grad)};
}

TEST(StageProgram, ItsPassesAreThePipelineSchedulesEachForwardBeforeItsBackward) {
  for (const auto& [name, s] : sp_cases()) {
    const PipelineShape shape = pipeline_shape(s);
    for (const ProgramUse use : sp_uses(s)) {
      const std::vector<StageProgram> progs = stage_programs(s, use);
      ASSERT_EQ(progs.size(), static_cast<std::size_t>(shape.stages));
      for (int st = 0; st < shape.stages; ++st) {
        const StageProgram& p = progs[static_cast<std::size_t>(st)];
        std::vector<PipelinePass> started;
        std::set<SpPassKey> running;
        std::map<SpPassKey, int> ended;
        for (std::size_t i = 0; i < p.ops.size(); ++i) {
          const StageOp& op = p.ops[i];
          if (op.kind == StageOpKind::kPassStart) {
            started.push_back(
                {op.pass, static_cast<int>(op.chunk), static_cast<int>(op.micro), op.grad});
            EXPECT_TRUE(running.insert(sp_key(op)).second) << name;
            if (op.pass == PassKind::kBackward) {
              // Its micro-batch's forward of the same chunk ran to its end before.
              const SpPassKey fwd{0, op.chunk, op.micro, static_cast<int>(GradPart::kWhole)};
              EXPECT_EQ(ended[fwd], 1) << name << " stage " << st << " micro " << op.micro;
            }
          }
          if (op.kind == StageOpKind::kPassEnd) {
            EXPECT_EQ(running.erase(sp_key(op)), 1U) << name << ": an end without its start";
            ++ended[sp_key(op)];
          }
          if (i >= p.passes_end) {
            EXPECT_NE(op.kind, StageOpKind::kPassStart) << name << ": a pass in the tail";
            EXPECT_NE(op.kind, StageOpKind::kCompute) << name << ": compute in the tail";
          }
        }
        EXPECT_TRUE(running.empty()) << name;
        // The passes, in the order they start, are the schedule's; forward and backward of
        // every micro-batch of every chunk once (DualPipe: half the micro-batches per chunk,
        // its backwards split into B and W on some).
        std::vector<PipelinePass> sched = stage_schedule(shape, st);
        for (PipelinePass& q : sched) q.partner = -1;  // the marks do not name it
        if (use == ProgramUse::kMemoized || s.moe.overlap == "none") {
          EXPECT_EQ(started, sched) << name << " stage " << st;
        }
        int fwd = 0;
        int whole_or_input = 0;
        for (const PipelinePass& q : started) {
          fwd += q.kind == PassKind::kForward ? 1 : 0;
          whole_or_input += q.kind == PassKind::kBackward && q.grad != GradPart::kWeight ? 1 : 0;
        }
        const int per_chunk = chunk_micro_batches(shape);
        EXPECT_EQ(fwd, per_chunk * shape.chunks) << name;
        EXPECT_EQ(whole_or_input, per_chunk * shape.chunks) << name;
        // The tail ends with the optimizer (and ZeRO 1/2's parameter gathers after it).
        ASSERT_LT(p.passes_end, p.ops.size());
        const bool gathers = s.par.zero == 1 || s.par.zero == 2;
        EXPECT_EQ(p.ops.back().kind, gathers ? StageOpKind::kParamGather : StageOpKind::kOptimizer)
            << name;
      }
    }
  }
}

TEST(StageProgram, EveryReceiveHasItsSendOnThePeerStage) {
  for (const auto& [name, s] : sp_cases()) {
    for (const ProgramUse use : sp_uses(s)) {
      const std::vector<StageProgram> progs = stage_programs(s, use);
      // (from, to, kind, chunk, micro) -> sends minus receives.
      std::map<std::tuple<int, int, int, std::uint32_t, std::uint32_t>, int> balance;
      for (const StageProgram& p : progs) {
        for (const StageOp& op : p.ops) {
          if (op.kind == StageOpKind::kSend) {
            ++balance[{p.stage, op.peer, static_cast<int>(op.pass), op.chunk, op.micro}];
          }
          if (op.kind == StageOpKind::kRecv) {
            EXPECT_NE(op.peer, p.stage) << name;
            --balance[{op.peer, p.stage, static_cast<int>(op.pass), op.chunk, op.micro}];
          }
        }
      }
      ASSERT_FALSE(balance.empty()) << name;
      for (const auto& [k, n] : balance) EXPECT_EQ(n, 0) << name << " from " << std::get<0>(k);
    }
  }
}

TEST(StageProgram, TheStreamGivesTheWholeProgramsOpsInOrder) {
  for (const auto& [name, s] : sp_cases()) {
    for (const ProgramUse use : sp_uses(s)) {
      const std::vector<StageProgram> whole = stage_programs(s, use);
      StageProgramStream stream(s, use);
      for (const StageProgram& w : whole) {
        std::vector<StageOp> ops;
        StageProgram& p = stream.program(w.stage);
        int groups = 0;
        while (stream.next_group(w.stage)) {
          ++groups;
          // A group ends at its pass's end or at that pass's sends.
          ASSERT_FALSE(p.ops.empty());
          EXPECT_TRUE(p.ops.back().kind == StageOpKind::kPassEnd ||
                      p.ops.back().kind == StageOpKind::kSend)
              << name;
          // A pass built before is one kBody op: its ops, with this micro-batch's records.
          for (const StageOp& op : p.ops) {
            if (op.kind != StageOpKind::kBody) {
              ops.push_back(op);
              continue;
            }
            ASSERT_LT(op.dp, p.bodies.size()) << name;
            for (StageOp b : p.bodies[op.dp]) {
              b.record.micro = op.micro;
              ops.push_back(b);
            }
          }
          p.ops.clear();
        }
        stream.tail(w.stage);
        EXPECT_EQ(p.passes_end, 0U);
        EXPECT_EQ(ops.size(), static_cast<std::size_t>(w.passes_end)) << name;
        ops.insert(ops.end(), p.ops.begin(), p.ops.end());
        ASSERT_EQ(ops.size(), w.ops.size()) << name;
        EXPECT_GT(groups, 0);
        for (std::size_t i = 0; i < ops.size(); ++i) {
          const StageOp& a = ops[i];
          const StageOp& b = w.ops[i];
          EXPECT_EQ(a.kind, b.kind) << name << " op " << i;
          EXPECT_EQ(a.seconds, b.seconds) << name << " op " << i;
          EXPECT_EQ(a.comm, b.comm) << name << " op " << i;
          EXPECT_EQ(a.dp, b.dp) << name << " op " << i;
          EXPECT_EQ(sp_key(a), sp_key(b)) << name << " op " << i;
          EXPECT_EQ(a.beside_s, b.beside_s) << name << " op " << i;
          EXPECT_EQ(a.record.kind, b.record.kind) << name << " op " << i;
          EXPECT_EQ(a.record.micro, b.record.micro) << name << " op " << i;
          EXPECT_EQ(a.record.chunk, b.record.chunk) << name << " op " << i;
          EXPECT_EQ(a.record.layer, b.record.layer) << name << " op " << i;
        }
        EXPECT_EQ(p.comm_ops.size(), w.comm_ops.size()) << name;
        EXPECT_EQ(p.dp, w.dp) << name;
        EXPECT_EQ(p.repeated, w.repeated) << name;
      }
    }
  }
}

// The memoized step runs what the program lists: per stage, its compute records are the
// program's kCompute ops in order (stage, kind, micro, chunk, layer; the op's seconds long), and
// it records one collective per kCollective op and data-parallel op that moves data.
TEST(StageProgram, TheMemoizedStepPricesExactlyTheProgramsOps) {
  for (const auto& [name, s] : sp_cases()) {
    if (s.par.tp_overlap) continue;  // the GEMM beside a collective is recorded by the executor
    const auto topo = topology::load_topology(s.topology).value();
    ASSERT_TRUE(validate(s, topo).ok()) << name << ": " << validate(s, topo).error().message;
    auto comm = make_analytical_comm(topo, s);
    const StepResult r = run_step(s, topo, *comm).value();
    ASSERT_TRUE(r.complete) << name;
    const std::vector<StageProgram> progs = stage_programs(s, ProgramUse::kMemoized);
    for (const StageProgram& p : progs) {
      const auto st = static_cast<std::uint32_t>(p.stage);
      std::vector<const OpRecord*> computed;
      for (const OpRecord& o : r.ops) {
        if (o.stage != st) continue;
        if (o.kind == OpKind::kForward || o.kind == OpKind::kBackward) computed.push_back(&o);
      }
      std::size_t k = 0;
      std::size_t colls = 0;
      for (const StageOp& op : p.ops) {
        if (op.kind == StageOpKind::kCollective && !is_free(p.comm_ops[op.comm])) ++colls;
        if (op.kind != StageOpKind::kCompute) continue;
        ASSERT_LT(k, computed.size()) << name << " stage " << st;
        const OpRecord& o = *computed[k++];
        EXPECT_EQ(o.kind, op.record.kind) << name;
        EXPECT_EQ(o.micro, op.record.micro) << name;
        EXPECT_EQ(o.chunk, op.record.chunk) << name;
        EXPECT_EQ(o.layer, op.record.layer) << name;
        EXPECT_NEAR(o.end_s - o.start_s, op.seconds, 1e-9 * (o.end_s + 1e-6)) << name;
      }
      EXPECT_EQ(k, computed.size()) << name << " stage " << st << ": compute the program lacks";
      for (const std::uint32_t c : p.dp) colls += is_free(p.comm_ops[c]) ? 0 : 1;
      std::size_t recorded = 0;
      for (const CollectiveRecord& c : r.colls) {
        recorded += c.stage == st && c.group != CommGroup::kPp ? 1 : 0;
      }
      EXPECT_EQ(recorded, colls) << name << " stage " << st;
    }
  }
}

}  // namespace
}  // namespace stepsim::workload
