// moe.overlap dualpipe: DeepSeek's DualPipe (DeepSeek-V3 technical report, section 3.2.1 and
// Table 2). The schedule as a pure function (every micro-batch once per direction, the mirrored
// stages' orders, the pairs, the B/W split), its bubble against the report's (PP/2 - 1)(F&B + B
// - 3W) on a list scheduler and in the memoized step, the 2x parameters and PP + 1 activations
// per GPU, the hidden + exposed EP time against the EP collectives' time, and the user errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "src/workload/dualpipe_mirror.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/memory_model.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

PipelineShape dual(int p, int m) {
  PipelineShape s;
  s.stages = p;
  s.chunks = 2;
  s.micro_batches = m;
  s.dualpipe = true;
  return s;
}

const std::vector<std::pair<int, int>> kDualShapes = {{2, 4},  {2, 6},  {4, 8},  {4, 12},
                                                      {6, 12}, {6, 14}, {8, 16}, {8, 20}};

TEST(DualPipe, EveryStageRunsEachMicroBatchOnceInBothDirections) {
  for (const auto& [p, m] : kDualShapes) {
    const PipelineShape shape = dual(p, m);
    for (int st = 0; st < p; ++st) {
      const std::vector<PipelinePass> ops = stage_schedule(shape, st);
      // (kind, grad part, chunk, micro) -> count; forward before its backward, B before its W.
      std::map<std::tuple<int, int, int, int>, int> seen;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const PipelinePass& q = ops[i];
        ASSERT_GE(q.micro, 0);
        ASSERT_LT(q.micro, m / 2) << "each direction takes half the micro-batches";
        const auto key = [&](PassKind k, GradPart g) {
          return std::make_tuple(static_cast<int>(k), static_cast<int>(g), q.chunk, q.micro);
        };
        if (q.kind == PassKind::kBackward) {
          EXPECT_EQ(seen[key(PassKind::kForward, GradPart::kWhole)], 1) << p << " " << st;
        }
        if (q.grad == GradPart::kWeight) {
          EXPECT_EQ(seen[key(PassKind::kBackward, GradPart::kInput)], 1) << p << " " << st;
        }
        ++seen[key(q.kind, q.grad)];
        // A pair: the forward of one chunk, next the backward of the other, naming each other.
        if (q.kind == PassKind::kForward && q.partner >= 0) {
          ASSERT_LT(i + 1, ops.size());
          const PipelinePass& b = ops[i + 1];
          EXPECT_EQ(b.kind, PassKind::kBackward);
          EXPECT_EQ(b.grad, GradPart::kWhole);
          EXPECT_NE(q.chunk, q.partner);
          EXPECT_EQ(b.chunk, q.partner);
          EXPECT_EQ(b.partner, q.chunk);
        }
      }
      for (int c = 0; c < 2; ++c) {
        for (int mb = 0; mb < m / 2; ++mb) {
          auto n = [&](PassKind k, GradPart g) {
            return seen[{static_cast<int>(k), static_cast<int>(g), c, mb}];
          };
          EXPECT_EQ(n(PassKind::kForward, GradPart::kWhole), 1);
          EXPECT_EQ(
              n(PassKind::kBackward, GradPart::kWhole) + n(PassKind::kBackward, GradPart::kInput),
              1);
          EXPECT_EQ(n(PassKind::kBackward, GradPart::kWeight),
                    n(PassKind::kBackward, GradPart::kInput));
        }
      }
      // Mirrored stages run the same order with the chunks swapped.
      std::vector<PipelinePass> mirror = stage_schedule(shape, p - 1 - st);
      for (PipelinePass& q : mirror) {
        q.chunk = 1 - q.chunk;
        if (q.partner >= 0) q.partner = 1 - q.partner;
      }
      EXPECT_EQ(mirror, ops) << "stage " << st << " of " << p;
    }
  }
}

TEST(DualPipe, TwoMirroredModelStagesPerGpuAndDirectionsFromBothEnds) {
  const PipelineShape shape = dual(4, 8);
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(virtual_stage(shape, st, 0), st);
    EXPECT_EQ(virtual_stage(shape, st, 1), 3 - st);
  }
  // Chunk 0 is fed at stage 0, chunk 1 at stage 3; each turns around at its far end.
  EXPECT_TRUE(input_of(shape, 0, PassKind::kForward, 0).external);
  EXPECT_TRUE(input_of(shape, 3, PassKind::kForward, 1).external);
  EXPECT_EQ(input_of(shape, 2, PassKind::kForward, 1).stage, 3);
  EXPECT_EQ(input_of(shape, 2, PassKind::kForward, 0).stage, 1);
  EXPECT_EQ(input_of(shape, 0, PassKind::kBackward, 1).kind, PassKind::kForward);
  EXPECT_EQ(input_of(shape, 1, PassKind::kBackward, 1).stage, 0);
  EXPECT_TRUE(holds_loss(shape, 3, 0));
  EXPECT_TRUE(holds_loss(shape, 0, 1));
  EXPECT_FALSE(holds_loss(shape, 3, 1));
  // 10 layers over 4 model stages (2, 3, 3, 2): stage 1 holds model stages 1 and 2.
  EXPECT_EQ(layers_in(shape, 10, 1, 0), 3);
  EXPECT_EQ(first_layer(shape, 10, 1, 0), 2);
  EXPECT_EQ(layers_in(shape, 10, 1, 1), 3);
  EXPECT_EQ(first_layer(shape, 10, 1, 1), 5);
  EXPECT_EQ(layers_in(shape, 10, 0, 1), 2);
  EXPECT_EQ(first_layer(shape, 10, 0, 1), 8);
}

TEST(DualPipe, EveryStageHoldsPpPlusOneChunksAtItsPeak) {
  // Table 2: activations per device PP + 1 (1F1B's first stage: PP).
  for (const auto& [p, m] : kDualShapes) {
    for (int st = 0; st < p; ++st) {
      const std::vector<int> held = peak_in_flight(dual(p, m), st);
      EXPECT_EQ(held[0] + held[1], p + 1) << p << " " << m << " stage " << st;
    }
  }
}

// A list scheduler over a shape's schedules: forward f, whole backward b, its weight part w
// (B alone b - w), an F&B pair f + b waiting for both inputs, free sends. Returns each stage's
// idle time up to the last stage's end.
std::vector<double> dp_idle_times(const PipelineShape& shape, double f, double b, double w) {
  const int p = shape.stages;
  std::vector<std::vector<PipelinePass>> ops;
  for (int st = 0; st < p; ++st) ops.push_back(stage_schedule(shape, st));
  std::map<std::tuple<int, int, int, int>, double> fin;  // (kind, stage, chunk, micro)
  auto ready = [&](int st, const PipelinePass& q) -> double {
    if (q.grad == GradPart::kWeight) return 0;
    const PassInput in = input_of(shape, st, q.kind, q.chunk);
    if (in.external) return 0;
    const auto it = fin.find({static_cast<int>(in.kind), in.stage, in.chunk, q.micro});
    return it == fin.end() ? -1 : it->second;
  };
  auto cost = [&](const PipelinePass& q) {
    if (q.kind == PassKind::kForward) return f;
    return q.grad == GradPart::kWhole ? b : q.grad == GradPart::kInput ? b - w : w;
  };
  std::vector<double> t(static_cast<std::size_t>(p), 0), busy = t;
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int st = 0; st < p; ++st) {
      auto& i = next[static_cast<std::size_t>(st)];
      const auto& v = ops[static_cast<std::size_t>(st)];
      while (i < v.size()) {
        const bool pair = v[i].kind == PassKind::kForward && v[i].partner >= 0;
        const std::size_t n = pair ? 2 : 1;
        double at = t[static_cast<std::size_t>(st)];
        bool known = true;
        for (std::size_t k = 0; k < n; ++k) {
          const double r = ready(st, v[i + k]);
          known = known && r >= 0;
          at = std::max(at, r);
        }
        if (!known) break;
        for (std::size_t k = 0; k < n; ++k) {
          at += cost(v[i + k]);
          busy[static_cast<std::size_t>(st)] += cost(v[i + k]);
          if (v[i + k].grad != GradPart::kWeight) {
            fin[{static_cast<int>(v[i + k].kind), st, v[i + k].chunk, v[i + k].micro}] = at;
          }
        }
        t[static_cast<std::size_t>(st)] = at;
        i += n;
        moved = true;
      }
    }
  }
  for (int st = 0; st < p; ++st) {
    EXPECT_EQ(next[static_cast<std::size_t>(st)], ops[static_cast<std::size_t>(st)].size())
        << "deadlock on stage " << st;
  }
  const double end = *std::max_element(t.begin(), t.end());
  std::vector<double> idle;
  for (int st = 0; st < p; ++st) idle.push_back(end - busy[static_cast<std::size_t>(st)]);
  return idle;
}

TEST(DualPipe, BubbleIsTheReportsFormulaWithItsFigureCosts) {
  // Figure 5's proportions: a backward chunk twice a forward, its weight part one forward, an
  // F&B pair F + B. Table 2: (PP/2 - 1)(F&B + B - 3W) on every device; 1F1B (PP - 1)(F + B).
  const double f = 1, b = 2, w = 1;
  for (const auto& [p, m] : kDualShapes) {
    const double formula = (p / 2 - 1) * ((f + b) + b - 3 * w);
    for (const double idle : dp_idle_times(dual(p, m), f, b, w)) {
      EXPECT_NEAR(idle, formula, 1e-9) << "pp " << p << " micro-batches " << m;
    }
    const PipelineShape one{p, 1, m};
    EXPECT_NEAR(dp_idle_times(one, f, b, w).front(), (p - 1) * (f + b), 1e-9);
  }
}

// A tiny MoE (8 experts, top-2) on 4 stages, EP 2 over DP 2, whose layer costs are GEMMs in
// Figure 5's proportions: flat GEMMs (backward twice the forward, its weight half), the
// attention small (s / 6h of the GEMMs), no elementwise work or launch overhead.
Scenario dp_tiny_moe(const std::string& overlap, const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets = {"model.experts=8",
                                   "model.top_k=2",
                                   "model.ffn=1024",
                                   "model.layers=8",
                                   "model.hidden=2048",
                                   "model.heads=16",
                                   "model.seq_len=256",
                                   "model.vocab=8",
                                   "parallel.tp=1",
                                   "parallel.pp=4",
                                   "parallel.ep=2",
                                   "parallel.global_batch=32",
                                   "parallel.zero=0",
                                   "compute.gemm_model=flat",
                                   "compute.attention=formula",
                                   "compute.elementwise_bytes=0",
                                   "compute.kernel_overhead=0s",
                                   "gpu.moe_elementwise_bytes=0",
                                   "fidelity=analytical",
                                   "moe.overlap=" + overlap};
  sets.insert(sets.end(), more.begin(), more.end());
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

class FreeComm final : public CommModel {
 public:
  Result<CommCost> cost(const CommOp&) override { return CommCost{}; }
  [[nodiscard]] std::string name() const override { return "free"; }
};

TEST(DualPipe, MemoizedBubbleIsTheReportsFormula) {
  const Scenario s = dp_tiny_moe("dualpipe");
  const auto topo = topology::load_topology(s.topology).value();
  ASSERT_TRUE(validate(s, topo).ok()) << validate(s, topo).error().message;
  FreeComm free;
  const StepResult r = run_step(s, topo, free).value();
  // Per chunk (two layers): F, B, W from the layer costs; F&B = F + B (free EP).
  const LayerCosts lc = layer_costs(s, true);
  const double f = 2 * lc.fwd_s, b = 2 * lc.bwd_s, w = 2 * lc.wgrad_s;
  const double formula = (4 / 2 - 1) * ((f + b) + b - 3 * w);
  std::printf("dualpipe: F %.1f B %.1f W %.1f us, bubble %.1f us, formula %.1f us\n", f * 1e6,
              b * 1e6, w * 1e6, r.bubble_s * 1e6, formula * 1e6);
  // The costs are Figure 5's but for the attention core and the router, which have no weight
  // part: W = 0.96 F. The list scheduler above with these costs gives 2% below the formula.
  EXPECT_NEAR(b / f, 2, 0.01);
  EXPECT_NEAR(w / f, 1, 0.05);
  EXPECT_NEAR(r.bubble_s, formula, 0.03 * formula);
  const std::vector<double> listed = dp_idle_times(dual(4, 16), f, b, w);
  EXPECT_NEAR(r.bubble_s, listed.front(), 0.005 * formula);
  // 1F1B on the same model: (PP - 1)(F + B), four and a half times as much (the output layer's
  // and routers' compute within 0.5%).
  FreeComm free1;
  const StepResult one = run_step(dp_tiny_moe("none"), topo, free1).value();
  EXPECT_NEAR(one.bubble_s, 3 * (f + b), 0.005 * one.bubble_s);
  // The same compute (but the output layer, which DualPipe's end stages run for half the
  // micro-batches); the optimizer updates both copies (twice 1F1B's).
  EXPECT_NEAR(r.compute_s, one.compute_s, 1e-3 * one.compute_s);
  EXPECT_NEAR(r.optimizer_s, 2 * one.optimizer_s, 0.01 * one.optimizer_s);
  EXPECT_LT(r.step_s - r.optimizer_s, one.step_s - one.optimizer_s);
  // The step's time still adds up.
  double sum = r.compute_s + r.bubble_s + r.optimizer_s;
  for (const double e : r.exposed_s) sum += e;
  EXPECT_NEAR(sum, r.step_s, 1e-9 * r.step_s);
}

TEST(DualPipe, HiddenPlusExposedEpIsTheEpCollectivesTime) {
  const auto topo = topology::load_topology(dp_tiny_moe("none").topology).value();
  auto run = [&](const std::string& overlap) {
    const Scenario s = dp_tiny_moe(overlap);
    EXPECT_TRUE(validate(s, topo).ok());
    auto comm = make_analytical_comm(topo, s);
    return run_step(s, topo, *comm).value();
  };
  const StepResult none = run("none");
  const StepResult dp = run("dualpipe");
  const auto ep = static_cast<std::size_t>(CommGroup::kEp);
  std::printf(
      "none: step %.1f us, bubble %.1f, EP exposed %.1f; dualpipe: step %.1f, bubble "
      "%.1f, EP exposed %.1f hidden %.1f us\n",
      none.step_s * 1e6, none.bubble_s * 1e6, none.exposed_s[ep] * 1e6, dp.step_s * 1e6,
      dp.bubble_s * 1e6, dp.exposed_s[ep] * 1e6, dp.ep_hidden_s * 1e6);
  ASSERT_GT(none.exposed_s[ep], 0);
  EXPECT_EQ(none.ep_hidden_s, 0);
  EXPECT_GT(dp.ep_hidden_s, 0);
  // The EP collectives of the critical stage: hidden + exposed is their time.
  double total = 0;
  for (const CollectiveRecord& c : dp.colls) {
    if (c.stage == dp.critical_stage && c.group == CommGroup::kEp) total += c.end_s - c.start_s;
  }
  EXPECT_NEAR(dp.ep_hidden_s + dp.exposed_s[ep], total, 1e-9 * dp.step_s);
  // Every stage runs as many EP collectives of the same sizes as 1F1B's (two chunks, half the
  // micro-batches each): none exposes all of that time.
  EXPECT_NEAR(dp.ep_hidden_s + dp.exposed_s[ep], none.exposed_s[ep], 1e-9 * none.step_s);
  EXPECT_LT(dp.step_s - dp.optimizer_s, none.step_s - none.optimizer_s);
}

TEST(DualPipe, TwiceTheParametersAndPpPlusOneChunksOfActivations) {
  Scenario one = dp_tiny_moe("none");
  Scenario two = dp_tiny_moe("dualpipe");
  const MemoryReport a = estimate_memory(one);
  const MemoryReport d = estimate_memory(two);
  auto term = [](const MemoryReport& r, int st, const char* name) {
    return r.stages.at(static_cast<std::size_t>(st)).bytes(name);
  };
  for (int st = 0; st < 4; ++st) {
    // Stage st holds model stages st and 3 - st: 1F1B's stage st plus its mirror's (the same).
    for (const char* name : {"weights", "gradients", "optimizer_states", "expert_weights",
                             "expert_gradients", "expert_optimizer_states"}) {
      EXPECT_DOUBLE_EQ(term(d, st, name), term(a, st, name) + term(a, 3 - st, name))
          << name << " stage " << st;
      EXPECT_DOUBLE_EQ(term(d, st, name), 2 * term(a, 1, name)) << name << " stage " << st;
    }
    // 5 chunks of 2 layers in flight, against 1F1B's stage 0: 4 micro-batches of 2 layers.
    EXPECT_DOUBLE_EQ(term(d, st, "activations"), 5.0 / 4 * term(a, 0, "activations"));
  }
  // The end stages hold the input embedding (model stage 0) and the output layer (model stage 3).
  EXPECT_DOUBLE_EQ(term(d, 0, "embeddings"), term(a, 0, "embeddings") + term(a, 3, "embeddings"));
  EXPECT_DOUBLE_EQ(term(d, 3, "embeddings"), term(d, 0, "embeddings"));
  EXPECT_EQ(term(d, 1, "embeddings"), 0);
}

TEST(DualPipe, LayoutsItCannotRunAreUserErrorsNamingTheRule) {
  const auto topo = topology::load_topology(dp_tiny_moe("none").topology).value();
  auto error = [&](const std::vector<std::string>& sets) {
    const Scenario s = dp_tiny_moe("dualpipe", sets);
    const auto ok = validate(s, topo);
    return ok ? std::string() : ok.error().message;
  };
  EXPECT_EQ(error({}), "");
  const std::string odd = error({"parallel.pp=1", "model.layers=8"});
  EXPECT_NE(odd.find("moe.overlap dualpipe needs parallel.pp even"), std::string::npos) << odd;
  const std::string few = error({"parallel.global_batch=12"});  // 6 micro-batches, pp 4
  EXPECT_NE(few.find("at least 2 x parallel.pp (8)"), std::string::npos) << few;
  const std::string vpp = error({"parallel.vpp=2"});
  EXPECT_NE(vpp.find("parallel.vpp 1"), std::string::npos) << vpp;
  EXPECT_EQ(error({"step.mode=whole", "fidelity=cell"}), "");
  const std::string whole = error({"step.mode=whole", "fidelity=cell", "parallel.recompute=full"});
  EXPECT_NE(whole.find("parallel.recompute none or selective"), std::string::npos) << whole;
  const std::string fsdp = error({"parallel.zero=3"});
  EXPECT_NE(fsdp.find("parallel.zero below 3"), std::string::npos) << fsdp;
}

// tiny.yaml (2 servers of 8 GPUs on 8 rails; TP 4, PP 2, DP 2) as an MoE of 8 experts with 16
// micro-batches: stage 1's GPUs are stage 0's on the same rails, so the mirrored copies'
// all-reduces (GPU g with g + 8) share no link and the whole step has no contention the
// memoized one leaves out.
Scenario dp_tiny_whole(int ep) {
  auto s = load_scenario(
      std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml",
      {"model.experts=8", "model.top_k=2", "model.ffn=1024", "parallel.ep=" + std::to_string(ep),
       "parallel.global_batch=32", "moe.overlap=dualpipe"});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

StepResult dp_run_mode(const Scenario& base, bool whole, const std::string& overlap = "dualpipe") {
  Scenario s = base;
  s.moe.overlap = overlap;
  s.step_mode = whole ? "whole" : "memoized";
  const auto topo = topology::load_topology(s.topology).value();
  EXPECT_TRUE(validate(s, topo).ok()) << validate(s, topo).error().message;
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  auto comm = make_packet_comm(topo, s, sync, opt);
  return whole ? run_whole_step(s, topo, {comm.get()}, sync, opt).value()
               : run_step(s, topo, *comm).value();
}

TEST(DualPipe, WholeStepRunsTheMemoizedSchedule) {
  // Without EP (parallel.ep 1) the pairs run one pass after the other in both modes: the same
  // schedule, the same sends, the same gradient reductions and mirror all-reduce. On tiny the
  // pipeline sends cross the network and a receiving pass starts about 4.1 us later in the
  // whole step than the memoized send cost puts it: 28 us of bubble (1F1B's own gap between
  // the modes on this step: 137 us). Tolerance: the step within 1%, the bubble within 0.5% of
  // the step, the compute and data-parallel time equal.
  const Scenario s = dp_tiny_whole(1);
  const StepResult m = dp_run_mode(s, false);
  const StepResult w = dp_run_mode(s, true);
  std::printf("ep 1: memoized step %.3f us bubble %.3f; whole step %.3f bubble %.3f\n",
              m.step_s * 1e6, m.bubble_s * 1e6, w.step_s * 1e6, w.bubble_s * 1e6);
  ASSERT_GT(m.bubble_s, 0);
  EXPECT_NEAR(w.bubble_s, m.bubble_s, 0.005 * m.step_s);
  EXPECT_NEAR(w.step_s, m.step_s, 0.01 * m.step_s);
  EXPECT_NEAR(w.compute_s, m.compute_s, 1e-6 * m.compute_s);
  const auto dp = static_cast<std::size_t>(CommGroup::kDp);
  EXPECT_NEAR(w.exposed_s[dp], m.exposed_s[dp], 0.01 * m.exposed_s[dp]);
  // The mirror all-reduce ran: one per TP rank and data-parallel copy of each stage pair
  // (4 x 2), of the bytes memoized mode gives it.
  const Placement place{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp};
  const CommOp op = mirror_reduce_op(s, pipeline_shape(s), place, 0);
  ASSERT_GT(op.bytes, 0);
  int mirror = 0;
  for (const CollectiveRecord& c : w.colls) {
    mirror += c.group == CommGroup::kDp && c.gpus == 2 && c.bytes == op.bytes ? 1 : 0;
  }
  EXPECT_EQ(mirror, 8);
  // DualPipe's bubble is below 1F1B's on the same step.
  EXPECT_LT(w.bubble_s, dp_run_mode(s, true, "none").bubble_s);
  // PP 4 with one GPU per stage and copy (Figure 5's costs, 8 GPUs in one server, the sends
  // over NVLink): the same bubble to 0.1%.
  const Scenario f = dp_tiny_moe("dualpipe", {"parallel.ep=1", "fidelity=packet"});
  const StepResult fm = dp_run_mode(f, false);
  const StepResult fw = dp_run_mode(f, true);
  std::printf("pp 4: memoized bubble %.3f us, whole %.3f us\n", fm.bubble_s * 1e6,
              fw.bubble_s * 1e6);
  EXPECT_NEAR(fw.bubble_s, fm.bubble_s, 1e-3 * fm.bubble_s);
  EXPECT_NEAR(fw.compute_s, fm.compute_s, 1e-6 * fm.compute_s);
}

TEST(DualPipe, WholeStepHidesEpBehindThePartnerChunk) {
  const Scenario s = dp_tiny_whole(2);
  const StepResult m = dp_run_mode(s, false);
  const StepResult w = dp_run_mode(s, true);
  const StepResult wn = dp_run_mode(s, true, "none");
  const auto ep = static_cast<std::size_t>(CommGroup::kEp);
  std::printf(
      "ep 2: memoized step %.3f us bubble %.3f EP hidden %.3f exposed %.3f; whole step %.3f "
      "bubble %.3f EP hidden %.3f exposed %.3f; whole none step %.3f EP exposed %.3f\n",
      m.step_s * 1e6, m.bubble_s * 1e6, m.ep_hidden_s * 1e6, m.exposed_s[ep] * 1e6, w.step_s * 1e6,
      w.bubble_s * 1e6, w.ep_hidden_s * 1e6, w.exposed_s[ep] * 1e6, wn.step_s * 1e6,
      wn.exposed_s[ep] * 1e6);
  // The step within 5% of the memoized one (tests/cli/whole_step.sh's rule on tiny): the whole
  // step pairs layer by layer, so the forward's first layer has no backward EP beside it and
  // it hides less than the memoized accounting's whole partner chunk.
  EXPECT_NEAR(w.step_s, m.step_s, 0.05 * m.step_s);
  EXPECT_GT(w.ep_hidden_s, 0.5 * m.ep_hidden_s);
  EXPECT_LE(w.ep_hidden_s, m.ep_hidden_s * (1 + 1e-9));
  // Hidden + exposed is the time the EP collectives took: what the step without overlap
  // exposes (the same collectives, none hidden).
  EXPECT_EQ(wn.ep_hidden_s, 0);
  EXPECT_NEAR(w.ep_hidden_s + w.exposed_s[ep], wn.exposed_s[ep], 0.01 * wn.exposed_s[ep]);
  EXPECT_LT(w.exposed_s[ep], wn.exposed_s[ep]);
  double sum = w.compute_s + w.bubble_s + w.optimizer_s;
  for (const double e : w.exposed_s) sum += e;
  EXPECT_NEAR(sum, w.step_s, 1e-9 * w.step_s);
}

}  // namespace
}  // namespace stepsim::workload
