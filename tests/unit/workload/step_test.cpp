// The training step: the pipeline's critical path against the hand-computed formula when
// communication is free, what the fabric adds, the time accounting, scenario errors.
#include "stepsim/workload/step.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::workload {
namespace {

class FreeComm final : public CommModel {
 public:
  Result<CommCost> cost(const CommOp&) override { return CommCost{}; }
  [[nodiscard]] std::string name() const override { return "free"; }
};

topology::Topology toy() {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml")
      .value();
}

// A GPT of 8 layers on 4 stages, no TP or DP: only the pipeline.
Scenario pipeline_only() {
  Scenario s;
  s.source = "test";
  s.model.layers = 8;
  s.model.hidden = 1024;
  s.model.heads = 8;
  s.model.ffn = 4096;
  s.model.vocab = 1;  // the output layer is negligible
  s.model.seq_len = 2048;
  s.par.pp = 4;
  s.par.dp = 1;
  s.par.global_batch = 8;
  s.par.zero = 0;
  s.compute.kernel_overhead = SimTime::zero();
  s.compute.gemm_model = "flat";  // the textbook formula below
  s.compute.attention = "formula";
  return s;
}

TEST(Step, WithFreeCommunicationOneF1BTakesTheTextbookTime) {
  // 1F1B with p stages and m micro-batches of forward f and backward b per stage:
  // (m + p - 1)(f + b), then the optimizer of stage 0 (the last to finish).
  const Scenario s = pipeline_only();
  const auto topo = toy();
  ASSERT_TRUE(validate(s, topo).ok());
  FreeComm free;
  const auto r = run_step(s, topo, free).value();
  const double h = 1024, T = 2048, L = 2, eff = s.gpu.gemm_efficiency;
  const double peak = s.gpu.bf16_flops * eff;
  const double hbm = s.gpu.hbm_bandwidth * s.compute.memory_efficiency;
  // GEMMs, attention, and the elementwise kernels (norms and residuals per hidden unit, the
  // GELU's 4 bytes per FFN unit).
  const double layer_f = 2 * T * 12 * h * h / peak + 4 * T * T * h / peak +
                         (s.compute.elementwise_bytes * h + 4 * 4096) * T / hbm;
  const double f = L * layer_f;
  const double b = 2 * f;
  const double m = 8, p = 4;
  const double params0 = L * 12 * h * h + 1 * h;  // two layers and the (1-word) embedding
  const double opt = params0 * s.compute.optimizer_bytes / hbm;
  EXPECT_NEAR(r.step_s, (m + p - 1) * (f + b) + opt, 1e-4 * r.step_s);
  EXPECT_EQ(r.critical_stage, 0u);
  EXPECT_NEAR(r.bubble_s, (p - 1) * (f + b), 1e-4 * r.step_s);
  // Interleaving (2 chunks per GPU) shrinks the bubble, never below the compute.
  Scenario v = s;
  v.par.vpp = 2;
  ASSERT_TRUE(validate(v, topo).ok());
  const auto ri = run_step(v, topo, free).value();
  EXPECT_LT(ri.step_s, r.step_s);
  EXPECT_GT(ri.step_s, m * (f + b));
  EXPECT_NEAR(ri.bubble_s, (p - 1) * (f + b) / 2, 0.02 * r.step_s);
}

Scenario tiny() {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", {});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

TEST(Step, TheFabricOnlyAddsTimeAndTheTimeAddsUp) {
  const Scenario s = tiny();
  const auto topo = topology::load_topology(s.topology).value();
  ASSERT_TRUE(validate(s, topo).ok());
  FreeComm free;
  const auto base = run_step(s, topo, free).value();
  auto ideal_comm = make_ideal_comm(topo, s);
  const auto ideal = run_step(s, topo, *ideal_comm).value();
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  auto packet_comm = make_packet_comm(topo, s, sync, opt);
  const auto packet = run_step(s, topo, *packet_comm).value();
  EXPECT_GT(ideal.step_s, base.step_s);
  EXPECT_GT(packet.step_s, base.step_s);
  for (const StepResult* r : {&base, &ideal, &packet}) {
    double sum = r->compute_s + r->bubble_s + r->optimizer_s;
    for (double e : r->exposed_s) sum += e;
    EXPECT_NEAR(sum, r->step_s, 1e-9 * r->step_s);
    // MFU is the model FLOPs over the step time and the GPUs' peak.
    EXPECT_NEAR(r->mfu, r->model_flops / r->step_s / 16 / s.gpu.bf16_flops, 1e-12);
  }
  EXPECT_GT(packet.distinct_collectives, 0u);
  EXPECT_GT(packet.collectives[static_cast<int>(CommGroup::kTp)], 0u);
  EXPECT_GT(packet.collectives[static_cast<int>(CommGroup::kDp)], 0u);
  EXPECT_GT(packet.collectives[static_cast<int>(CommGroup::kPp)], 0u);
  EXPECT_EQ(packet.drops, 0u);
  // The same run twice gives the same digest.
  auto again_comm = make_packet_comm(topo, s, sync, opt);
  EXPECT_EQ(run_step(s, topo, *again_comm).value().digest, packet.digest);
}

TEST(Step, TpOverlapHidesTpTimeAlikeInBothStepModes) {
  // Megatron's TP overlap on the tiny GPT (TP 4 with sequence parallelism, packet fidelity):
  // the memoized executor and the whole step both run each TP collective beside its GEMM
  // (overlapped_seconds); the GEMMs move off the compute stream's serial path, none is lost.
  const Scenario s = tiny();
  const auto topo = topology::load_topology(s.topology).value();
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  auto run = [&](bool overlap, bool whole) {
    Scenario x = s;
    x.par.tp_overlap = overlap;
    EXPECT_TRUE(validate(x, topo).ok());
    auto comm = make_packet_comm(topo, x, sync, opt);
    return whole ? run_whole_step(x, topo, {comm.get()}, sync, opt).value()
                 : run_step(x, topo, *comm).value();
  };
  double gap[2] = {0, 0};
  for (const bool whole : {false, true}) {
    const StepResult plain = run(false, whole);
    const StepResult ov = run(true, whole);
    const int tp = static_cast<int>(CommGroup::kTp);
    EXPECT_LT(ov.step_s, plain.step_s) << whole;
    EXPECT_LT(ov.exposed_s[tp], 0.9 * plain.exposed_s[tp]) << whole;
    double sum = ov.compute_s + ov.bubble_s + ov.optimizer_s;
    for (double e : ov.exposed_s) sum += e;
    EXPECT_NEAR(sum, ov.step_s, 1e-9 * ov.step_s);
    if (ov.critical_stage == plain.critical_stage) {
      EXPECT_NEAR(ov.compute_s, plain.compute_s, 1e-6 * plain.compute_s) << whole;
    }
    gap[whole ? 1 : 0] = ov.step_s;
  }
  // The two modes agree on the overlapped step as they do on the tiny step (5%).
  EXPECT_NEAR(gap[1] / gap[0], 1.0, 0.05);
}

TEST(Step, OverlappingGradientReductionHidesIt) {
  Scenario s = tiny();
  s.fidelity = "ideal";
  const auto topo = topology::load_topology(s.topology).value();
  auto comm = make_ideal_comm(topo, s);
  const auto overlapped = run_step(s, topo, *comm).value();
  s.par.overlap_grad_reduce = false;
  const auto serial = run_step(s, topo, *comm).value();
  EXPECT_LE(overlapped.exposed_s[static_cast<int>(CommGroup::kDp)],
            serial.exposed_s[static_cast<int>(CommGroup::kDp)]);
  EXPECT_LE(overlapped.step_s, serial.step_s);
}

TEST(Step, CopiesOnTheOtherTpRanksShareTheNics) {
  // 4 servers of 2 GPUs behind one 400G NIC each; TP 2, DP 4. The two TP ranks' data-parallel
  // all-reduces run at the same time over the same NICs, so each takes about twice as long as
  // alone: what `concurrent` adds at packet fidelity.
  auto topo = testing::leaf_spine(2, 2, 2);
  for (topology::NodeId v = 0; v < 4; ++v) topo.nodes[v].gpus = 2;
  Scenario s = pipeline_only();
  s.par.pp = 1;
  s.par.tp = 2;
  s.par.dp = 4;
  s.par.zero = 0;
  s.par.overlap_grad_reduce = false;
  s.model.layers = 2;
  ASSERT_TRUE(validate(s, topo).ok()) << validate(s, topo).error().message;
  pdes::SerialSync sync;
  const pdes::EngineOptions opt;
  const int dp = static_cast<int>(CommGroup::kDp);
  auto together_comm = make_packet_comm(topo, s, sync, opt);
  const auto together = run_step(s, topo, *together_comm).value();
  s.concurrent = false;
  auto alone_comm = make_packet_comm(topo, s, sync, opt);
  const auto alone = run_step(s, topo, *alone_comm).value();
  EXPECT_NEAR(together.exposed_s[dp] / alone.exposed_s[dp], 2.0, 0.3);
  EXPECT_GT(together.step_s, alone.step_s);
  // Both copies' traffic is in the links: twice the bytes on the NICs.
  double nic_bytes[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    for (const LinkRow& l : (k == 0 ? together : alone).links) {
      if (l.tier == 0) nic_bytes[k] += l.bytes;
    }
  }
  EXPECT_NEAR(nic_bytes[0] / nic_bytes[1], 2.0, 0.01);
}

// Costs every collective 1 ms; from the `stop_at`-th costed collective on, the engine was
// stopped (a signal): cost() says so instead of a cost.
class StoppingComm final : public CommModel {
 public:
  explicit StoppingComm(int stop_at) : stop_at_(stop_at) {}
  Result<CommCost> cost(const CommOp&) override {
    CommCost c;
    c.seconds = 1e-3;
    c.stopped = ++calls_ >= stop_at_;
    return c;
  }
  [[nodiscard]] std::string name() const override { return "stopping"; }

 private:
  int stop_at_;
  int calls_ = 0;
};

TEST(Step, AStoppedCollectiveInterruptsTheStepWithWhatWasDone) {
  const Scenario s = tiny();
  const auto topo = topology::load_topology(s.topology).value();
  StoppingComm never(1 << 30);
  const auto whole = run_step(s, topo, never).value();
  EXPECT_TRUE(whole.complete);
  EXPECT_FALSE(whole.interrupted);
  StoppingComm comm(5);
  const auto r = run_step(s, topo, comm).value();
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.colls.size(), 4u);  // the four collectives before the stop
  EXPECT_LT(r.step_s, whole.step_s);
  EXPECT_FALSE(r.ops.empty());
}

// The planner's scoring (run_step_totals: no records) against run_step on `s`: the same step
// time, split and digest; `name` labels the failures.
void step_test_expect_totals_equal_full(const Scenario& s, const std::string& name) {
  const auto topo = topology::load_topology(s.topology).value();
  auto full_comm = make_analytical_comm(topo, s);
  auto totals_comm = make_analytical_comm(topo, s);
  const StepResult full = run_step(s, topo, *full_comm).value();
  const StepResult totals = run_step_totals(s, topo, *totals_comm).value();
  ASSERT_TRUE(full.complete) << name;
  EXPECT_FALSE(full.colls.empty()) << name;
  EXPECT_TRUE(totals.colls.empty() && totals.ops.empty()) << name;
  EXPECT_EQ(totals.step_s, full.step_s) << name;
  EXPECT_EQ(totals.mfu, full.mfu) << name;
  EXPECT_EQ(totals.bubble_s, full.bubble_s) << name;
  EXPECT_EQ(totals.compute_s, full.compute_s) << name;
  EXPECT_EQ(totals.ep_hidden_s, full.ep_hidden_s) << name;
  for (int g = 0; g < kCommGroups; ++g) EXPECT_EQ(totals.exposed_s[g], full.exposed_s[g]) << name;
  EXPECT_EQ(totals.digest, full.digest) << name;
}

// The planner's scoring keeps no records but must not change the step: the same time, split,
// MFU and digest as run_step, for a dense step with ZeRO 3's per-layer gathers, interleaving and
// full recomputation (every path that asks for collectives over and over).
TEST(Step, TotalsWithoutRecordsAreTheFullStepsNumbers) {
  for (const char* layout : {"zero=3", "vpp=2", "recompute=full", "tp_overlap"}) {
    Scenario s = tiny();
    if (std::string(layout) == "zero=3") s.par.zero = 3;
    if (std::string(layout) == "vpp=2") s.par.vpp = 2;
    if (std::string(layout) == "recompute=full") s.par.recompute = "full";
    if (std::string(layout) == "tp_overlap") s.par.tp_overlap = true;
    step_test_expect_totals_equal_full(s, layout);
  }
}

// The same for the layouts whose passes the scoring runs from their sums (a pass body, each of
// its collectives known): an MoE model's EP collectives, TP overlap's GEMMs beside them,
// interleaving, and moe.overlap's (the EP collectives hidden behind the partner pass, which
// stay op by op).
TEST(Step, TotalsWithoutRecordsAreTheFullStepsNumbersForMoeLayouts) {
  const std::string yaml = std::string(STEPSIM_SOURCE_DIR) + "/workloads/mixtral-8x7b.yaml";
  const std::vector<std::vector<std::string>> layouts = {
      {"fidelity=analytical"},
      {"fidelity=analytical", "parallel.tp_overlap=true", "parallel.pp=2", "parallel.vpp=2"},
      {"fidelity=analytical", "moe.overlap=1f1b"},
      {"fidelity=analytical", "moe.overlap=dualpipe", "parallel.pp=4"},
  };
  for (const auto& sets : layouts) {
    const Scenario s = load_scenario(yaml, sets).value();
    const std::string name = sets.back();
    EXPECT_GT(s.par.micro_batches(), 2) << name;  // passes built once, run again
    step_test_expect_totals_equal_full(s, name);
  }
}

TEST(Step, TheProgressCallbackSeesEveryPassAndCanStopTheStep) {
  const Scenario s = pipeline_only();
  const auto topo = toy();
  FreeComm free;
  int passes = 0;
  const auto whole = run_step(s, topo, free, [&](double) { return ++passes > 0; }).value();
  EXPECT_TRUE(whole.complete);
  // Forward and backward of every micro-batch on every stage.
  EXPECT_EQ(passes, 2 * s.par.pp * static_cast<int>(s.par.micro_batches()));
  int left = 3;
  const auto r = run_step(s, topo, free, [&](double) { return --left > 0; }).value();
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.complete);
  EXPECT_LT(r.step_s, whole.step_s);
  // A step that passes `end` stops there, complete = false but not interrupted.
  Scenario short_end = s;
  short_end.end = SimTime::us(1);
  const auto cut = run_step(short_end, topo, free).value();
  EXPECT_FALSE(cut.complete);
  EXPECT_FALSE(cut.interrupted);
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Scenario, BadFilesGiveOneClearMessage) {
  const std::string topo = std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml";
  const std::string base =
      "model: {layers: 4, hidden: 512, heads: 8, ffn: 2048}\n"
      "parallel: {tp: 4, pp: 2, dp: 2, global_batch: 8}\ntopology: " +
      topo + "\n";
  // Unknown key: file, line, key.
  auto r = load_scenario(write("unknown.yaml", base + "parallel_x: 3\n"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown.yaml:4"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("parallel_x"), std::string::npos);
  // Negative sizes are out of range.
  r = load_scenario(write("neg.yaml", base), {"model.hidden=-512"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("model.hidden"), std::string::npos) << r.error().message;
  const auto t = topology::load_topology(topo).value();
  // TP that does not divide the heads.
  auto s = load_scenario(write("tp.yaml", base), {"model.heads=6", "model.hidden=516"}).value();
  auto v = validate(s, t);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("parallel.tp (4) must divide model.heads (6)"),
            std::string::npos)
      << v.error().message;
  // More GPUs than the topology has.
  s = load_scenario(write("big.yaml", base), {"parallel.dp=4"}).value();
  v = validate(s, t);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("32 GPUs, but"), std::string::npos) << v.error().message;
  // A batch that does not split.
  s = load_scenario(write("batch.yaml", base), {"parallel.global_batch=7"}).value();
  EXPECT_FALSE(validate(s, t).ok());
  // A missing topology.
  r = load_scenario(write("notopo.yaml", "model: {layers: 2}\n"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("topology: missing"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::workload
