// Megatron's MoE parallel folding (parallel.etp, EP over tp x cp x dp): the layouts it allows
// and refuses, where the EP and expert-DP groups land, and what EP does to expert memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "src/workload/expert_grid.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/layer_comm.hpp"
#include "stepsim/workload/memory_model.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/stage_program.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

Scenario folding_e1(const std::vector<std::string>& sets = {}) {
  auto s = load_scenario(
      std::string(STEPSIM_SOURCE_DIR) + "/workloads/validation/e1-qwen3-30b-a3b-ep16-h100.yaml",
      sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.value();
}

TEST(MoeFolding, EpBeyondDpIsALayoutAndNonDividingOnesAreNamed) {
  ModelSpec m;
  m.experts = 128;
  m.top_k = 8;
  Parallelism p;
  p.tp = 2;
  p.dp = 16;
  p.ep = 32;  // EP 32 over TP 2 x DP 16: folded (expert TP 1)
  p.etp = 1;
  EXPECT_TRUE(validate_expert_grid(m, p).ok());
  EXPECT_EQ(p.expert_dp(), 1);
  p.etp = 0;  // expert TP = tp 2: 2 x 32 does not divide 32
  const auto bad = validate_expert_grid(m, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("parallel.etp x parallel.ep (2 x 32 = 64) must divide "
                                     "parallel.tp x parallel.cp x the data parallel size (2 x 1 x "
                                     "16 = 32)"),
            std::string::npos)
      << bad.error().message;
  p.etp = 4;
  EXPECT_NE(validate_expert_grid(m, p).error().message.find("must divide parallel.tp"),
            std::string::npos);
  p.etp = 1;
  p.ep = 256;
  EXPECT_NE(validate_expert_grid(m, p).error().message.find("must divide model.experts"),
            std::string::npos);
  // The whole scenario: E1's 16 GPUs as TP 2 x DP 8 with EP 16 (> DP) validates and runs.
  const Scenario s = folding_e1({"parallel.tp=2", "parallel.dp=8", "parallel.etp=1"});
  const auto topo = topology::load_topology(s.topology).value();
  EXPECT_TRUE(validate(s, topo).ok());
  const Scenario no = folding_e1({"parallel.tp=2", "parallel.dp=8"});  // etp 2 x ep 16 > 16
  const auto err = validate(no, topo);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("expert grid"), std::string::npos);
  auto comm = make_analytical_comm(topo, s);
  EXPECT_GT(run_step(s, topo, *comm).value().step_s, 0);
}

TEST(MoeFolding, EpGroupLandsOnTheFoldedGpus) {
  Placement pl{2, 1, 16, 2};  // TP 2, DP 16, PP 2: 32 GPUs a stage
  // EP = TP x DP with expert TP 1: the whole stage, in rank order.
  std::vector<std::uint32_t> stage1(32);
  for (std::uint32_t i = 0; i < 32; ++i) stage1[i] = 32 + i;
  EXPECT_EQ(pl.ep_group(1, 1, 32), stage1);
  // Expert TP = tp: EP over the DP ranks of TP rank 0, as before folding.
  EXPECT_EQ(pl.ep_group(0, 2, 16), pl.dp_group(0, 1, 16));
  EXPECT_EQ(pl.expert_dp_group(0, 2, 4, 4), pl.dp_group(0, 4, 4));
  // EP 4 with expert TP 1 over TP 2: two DP ranks' both TP ranks. Another GPU's copy is the
  // block of four that holds it: (t 1, d 5) is global rank 11, in 8..11.
  const std::vector<std::uint32_t> ref = pl.ep_group(0, 1, 4);
  EXPECT_EQ(ref, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(translate_group(pl, ref, 1, 0, 5), (std::vector<std::uint32_t>{8, 9, 10, 11}));
  // Every GPU's copy of the EP groups and of the expert-DP groups: a partition of the stage
  // whose EP and expert-DP groups cross in exactly one GPU (the expert grid).
  const std::vector<std::uint32_t> edp = pl.expert_dp_group(0, 1, 4, 8);
  EXPECT_EQ(edp, (std::vector<std::uint32_t>{0, 4, 8, 12, 16, 20, 24, 28}));
  for (int d = 0; d < 16; ++d) {
    for (int t = 0; t < 2; ++t) {
      const auto g = translate_group(pl, ref, t, 0, d);
      const auto e = translate_group(pl, edp, t, 0, d);
      const std::uint32_t self = pl.rank(t, 0, d, 0);
      EXPECT_EQ(std::count(g.begin(), g.end(), self), 1);
      EXPECT_EQ(std::count(e.begin(), e.end(), self), 1);
      std::set<std::uint32_t> both(g.begin(), g.end());
      int common = 0;
      for (std::uint32_t x : e) common += both.count(x) > 0 ? 1 : 0;
      EXPECT_EQ(common, 1);
    }
  }
  // With CP: EP over TP x CP x DP positions in rank order (CP before DP).
  Placement cp{2, 2, 4, 1};
  EXPECT_EQ(cp.ep_group(0, 2, 4), (std::vector<std::uint32_t>{0, 2, 4, 6}));
}

TEST(MoeFolding, DispatchRunsOverTheFoldedGroupAndExpertTpOverItsOwn) {
  const Scenario s = folding_e1({"parallel.tp=2", "parallel.dp=8", "parallel.etp=1"});
  const Placement pl{2, 1, 8, 1};
  const std::vector<CommOp> ops = layer_collectives(s, pl, 0, PassKind::kForward, true);
  std::vector<std::uint32_t> all(16);
  for (std::uint32_t i = 0; i < 16; ++i) all[i] = i;
  int tp_ops = 0;
  for (const CommOp& op : ops) {
    if (op.group == CommGroup::kEp) {
      EXPECT_EQ(op.gpus, all);
    }
    if (op.group == CommGroup::kTp) ++tp_ops;
  }
  EXPECT_EQ(tp_ops, 2);  // the attention's AG + RS only: expert TP 1 has none
  // Expert TP 2 (= tp): the FFN's pair too, and the dense layers keep theirs.
  const Scenario t2 = folding_e1({"parallel.tp=2", "parallel.dp=8", "parallel.ep=8"});
  int t2_ops = 0;
  for (const CommOp& op : layer_collectives(t2, pl, 0, PassKind::kForward, true)) {
    t2_ops += op.group == CommGroup::kTp ? 1 : 0;
  }
  EXPECT_EQ(t2_ops, 4);
  // Routed-expert parameters per GPU: experts / ep of them, each 1 / etp: EP 16 with expert
  // TP 1 holds as many as EP 8 with expert TP 2, twice as many as EP 16 with expert TP 2
  // (which needs 32 GPUs a stage: memory only).
  const double a = layer_params(s, true).expert;
  EXPECT_DOUBLE_EQ(a, layer_params(t2, true).expert);
  EXPECT_DOUBLE_EQ(a,
                   2 * layer_params(folding_e1({"parallel.tp=2", "parallel.dp=16"}), true).expert);
  EXPECT_DOUBLE_EQ(a, 128.0 / 16 * s.model.ffn_params());
}

double term(const Scenario& s, const char* name) {
  return estimate_memory(s).stages.at(0).bytes(name);
}

TEST(MoeFolding, DoublingEpHalvesTheRoutedExpertsWeights) {
  // 32 GPUs as TP 2 x DP 16 (no topology needed: the memory model is arithmetic).
  const std::vector<std::string> base{"parallel.tp=2", "parallel.dp=16", "parallel.etp=1"};
  auto with = [&](const char* ep, const char* zero) {
    std::vector<std::string> v = base;
    v.emplace_back(std::string("parallel.ep=") + ep);
    v.emplace_back(std::string("parallel.zero=") + zero);
    return folding_e1(v);
  };
  for (const char* zero : {"0", "1"}) {
    const Scenario a = with("8", zero);
    const Scenario b = with("16", zero);
    const Scenario c = with("32", zero);  // EP 32 > DP 16: folded over TP
    EXPECT_DOUBLE_EQ(term(b, "expert_weights"), term(a, "expert_weights") / 2);
    EXPECT_DOUBLE_EQ(term(c, "expert_weights"), term(b, "expert_weights") / 2);
    EXPECT_GT(term(c, "expert_weights"), 0);
  }
  // Under ZeRO 1 the optimizer states shard over expert-DP = 32 / EP: per GPU the same.
  EXPECT_DOUBLE_EQ(term(with("32", "1"), "expert_optimizer_states"),
                   term(with("8", "1"), "expert_optimizer_states"));
  // Without ZeRO they halve with the weights.
  EXPECT_DOUBLE_EQ(term(with("16", "0"), "expert_optimizer_states"),
                   term(with("8", "0"), "expert_optimizer_states") / 2);
}

}  // namespace
}  // namespace stepsim::workload
