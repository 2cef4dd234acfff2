// parallel.layout (Megatron-Core's pipeline layout notation): the parser and its errors, the
// checks against the model, the layout that equals the default split (bit-identical steps and
// memory), and DeepSeek-V3's 61 layers over 8 x 4 virtual stages with an MTP stage.
#include "stepsim/workload/pipeline_layout.hpp"

#include <gtest/gtest.h>

#include <map>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/memory_model.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

std::string error_of(const std::string& text) {
  auto r = parse_pipeline_layout(text);
  return r.ok() ? std::string() : r.error().message;
}

TEST(PipelineLayout, ParsesMegatronsNotation) {
  // The example of Megatron-Core's docstring: "Ettt|(tt|)*29,m|L".
  const auto v = parse_pipeline_layout("Et*3|(tt|)*29,m|L").value();
  ASSERT_EQ(v.size(), 32u);
  EXPECT_EQ(v[0].layers, 3);
  EXPECT_TRUE(v[0].embedding);
  int layers = 0;
  for (std::size_t i = 1; i < 30; ++i) {
    EXPECT_EQ(v[i].layers, 2) << i;
    EXPECT_FALSE(v[i].embedding || v[i].loss || v[i].mtp > 0) << i;
    layers += v[i].layers;
  }
  EXPECT_EQ(layers + 3, 61);
  EXPECT_EQ(v[30].mtp, 1);
  EXPECT_EQ(v[30].layers, 0);
  EXPECT_TRUE(v[31].loss);
  EXPECT_EQ(v[31].layers, 0);
  // x*N repeats one character ('|' too), (...)*N a group; commas are cosmetic; x*0 is nothing.
  const auto w = parse_pipeline_layout("E,t*2|*2t(t)*3m*0L").value();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].layers, 2);
  EXPECT_EQ(w[1].layers, 0);
  EXPECT_EQ(w[2].layers, 4);
  EXPECT_EQ(w[2].mtp, 0);
  EXPECT_TRUE(w[2].loss);
}

TEST(PipelineLayout, SyntaxErrorsSayWhereAndWhat) {
  EXPECT_NE(error_of("Et*|L").find("position 4"), std::string::npos) << error_of("Et*|L");
  EXPECT_NE(error_of("Et*|L").find("expected a count"), std::string::npos);
  EXPECT_NE(error_of("Ex|L").find("position 2"), std::string::npos);
  EXPECT_NE(error_of("Ex|L").find("unknown character 'x'"), std::string::npos);
  EXPECT_NE(error_of("E(tt|*2").find("position 2"), std::string::npos);
  EXPECT_NE(error_of("E(tt|*2").find("without its ')'"), std::string::npos);
  EXPECT_NE(error_of("E(t(t)*2)*2|L").find("nested"), std::string::npos);
  EXPECT_NE(error_of("E(tt)|L").find("expected '*N' after ')'"), std::string::npos);
  EXPECT_NE(error_of("Et)|L").find("position 3"), std::string::npos);
  EXPECT_NE(error_of("E*t|L").find("expected a count"), std::string::npos);
  EXPECT_NE(error_of("E()*2|L").find("empty group"), std::string::npos);
  EXPECT_NE(error_of("Et*99999999999|L").find("count above"), std::string::npos);
}

Result<bool> check(const std::string& text, int pp, int vpp, int layers, int mtp) {
  auto v = parse_pipeline_layout(text);
  if (!v) return v.error();
  return check_pipeline_layout(text, *v, pp, vpp, layers, mtp);
}

TEST(PipelineLayout, ChecksAgainstTheModelAndThePipeline) {
  EXPECT_TRUE(check("Et*3|(tt|)*29m|L", 8, 4, 61, 1).ok());
  auto msg = [](const Result<bool>& r) { return r.ok() ? std::string() : r.error().message; };
  // 32 virtual stages on pp 8 x vpp 1: says which vpp would do.
  EXPECT_NE(msg(check("Et*3|(tt|)*29m|L", 8, 1, 61, 1)).find("set parallel.vpp 4"),
            std::string::npos);
  EXPECT_NE(msg(check("Et*3|(tt|)*29m|L", 8, 4, 60, 1)).find("61 transformer layers"),
            std::string::npos);
  EXPECT_NE(msg(check("Et*3|(tt|)*29m|L", 8, 4, 61, 0)).find("model.mtp_layers is 0"),
            std::string::npos);
  EXPECT_NE(msg(check("tEt|tL", 2, 1, 3, 0)).find("one E"), std::string::npos);
  EXPECT_NE(msg(check("|EttL", 2, 1, 2, 0)).find("one E"), std::string::npos);
  EXPECT_NE(msg(check("EtLt|t", 2, 1, 3, 0)).find("one L"), std::string::npos);
  EXPECT_NE(msg(check("EttL|L", 2, 1, 2, 0)).find("one L"), std::string::npos);
  EXPECT_NE(msg(check("Etm|tL", 2, 1, 2, 1)).find("after an MTP"), std::string::npos);
  EXPECT_NE(msg(check("Et|m|t|L", 2, 2, 2, 1)).find("after an MTP"), std::string::npos);
  // MTP in a first model chunk (virtual stage 1 of pp 2 x vpp 2): Megatron-Core refuses it.
  EXPECT_NE(msg(check("Et|tm||L", 2, 2, 2, 1)).find("last model chunk"), std::string::npos);
  EXPECT_NE(msg(check("Ett|m|m|L", 2, 2, 2, 2)).find("one virtual stage"), std::string::npos);
}

topology::Topology layout_toy() {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml")
      .value();
}

Scenario layout_tiny(const std::vector<std::string>& sets) {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

void expect_same_memory(const Scenario& a, const Scenario& b) {
  const MemoryReport ma = estimate_memory(a);
  const MemoryReport mb = estimate_memory(b);
  ASSERT_EQ(ma.stages.size(), mb.stages.size());
  for (std::size_t st = 0; st < ma.stages.size(); ++st) {
    for (std::size_t k = 0; k < ma.stages[st].terms.size(); ++k) {
      EXPECT_EQ(ma.stages[st].terms[k].bytes, mb.stages[st].terms[k].bytes)
          << st << " " << ma.stages[st].terms[k].name;
    }
  }
}

TEST(PipelineLayout, TheDefaultSplitWrittenOutIsBitIdentical) {
  const auto topo = layout_toy();
  // tiny.yaml: 4 layers on 2 stages; interleaved on 2 x 2; with an MTP module on the last.
  const std::vector<std::vector<std::string>> cases = {
      {"parallel.layout=Ett|ttL"},
      {"parallel.vpp=2", "parallel.layout=Et|t|t|tL"},
      {"model.mtp_layers=1", "parallel.layout=Ett|ttmL"},
      {"parallel.vpp=2", "model.mtp_layers=1", "parallel.layout=E,t|t|t|t,m,L"}};
  for (const auto& sets : cases) {
    std::vector<std::string> plain(sets.begin(), sets.end() - 1);
    for (const char* mode : {"memoized", "whole"}) {
      plain.push_back(std::string("step.mode=") + mode);
      std::vector<std::string> laid = plain;
      laid.push_back(sets.back());
      const Scenario a = layout_tiny(plain);
      const Scenario b = layout_tiny(laid);
      plain.pop_back();
      ASSERT_TRUE(validate(b, topo).ok()) << validate(b, topo).error().message;
      expect_same_memory(a, b);
      pdes::SerialSync sync;
      pdes::EngineOptions opt;
      auto ca = make_packet_comm(topo, a, sync, opt);
      auto cb = make_packet_comm(topo, b, sync, opt);
      const bool whole = std::string(mode) == "whole";
      const StepResult ra = whole ? run_whole_step(a, topo, {ca.get()}, sync, opt).value()
                                  : run_step(a, topo, *ca).value();
      const StepResult rb = whole ? run_whole_step(b, topo, {cb.get()}, sync, opt).value()
                                  : run_step(b, topo, *cb).value();
      EXPECT_EQ(ra.step_s, rb.step_s) << sets.back() << " " << mode;
      EXPECT_EQ(ra.digest, rb.digest) << sets.back() << " " << mode;
    }
  }
}

// A DeepSeek-V3-shaped model (61 layers, the first 3 dense, 1 MTP module) small enough for the
// 16 GPUs of the toy topology: TP 1, PP 8 x VPP 4, EP 2 over DP 2.
Scenario deepseek_like() {
  Scenario s;
  s.source = "test";
  s.model.layers = 61;
  s.model.hidden = 512;
  s.model.heads = 8;
  s.model.ffn = 256;
  s.model.vocab = 32000;
  s.model.seq_len = 1024;
  s.model.activation = "swiglu";
  s.model.experts = 8;
  s.model.top_k = 2;
  s.model.shared_experts = 1;
  s.model.dense_layers = 3;
  s.model.dense_ffn = 1024;
  s.model.mtp_layers = 1;
  s.par.pp = 8;
  s.par.vpp = 4;
  s.par.ep = 2;
  s.par.dp = 2;
  s.par.global_batch = 16;
  s.par.layout = "Et*3|(tt|)*29m|L";
  s.topology = std::string(STEPSIM_SOURCE_DIR) + "/topologies/toy-2server.yaml";
  s.fidelity = "ideal";
  return s;
}

TEST(PipelineLayout, DeepSeekV3On8x4VirtualStagesRunsAsLaidOut) {
  const Scenario s = deepseek_like();
  const auto topo = layout_toy();
  ASSERT_TRUE(validate(s, topo).ok()) << validate(s, topo).error().message;
  const PipelineShape shape = pipeline_shape(s);
  EXPECT_EQ(shape.mtp_virtual, 30);
  EXPECT_EQ(mtp_stage(shape), 6);
  for (int vi = 0; vi < 32; ++vi) {
    const int want = vi == 0 ? 3 : vi >= 30 ? 0 : 2;
    EXPECT_EQ(layers_in(shape, 61, vi % 8, vi / 8), want) << vi;
  }
  EXPECT_EQ(first_layer(shape, 61, 0, 1), 17);  // 3 + 7 stages x 2
  auto comm = make_ideal_comm(topo, s);
  const StepResult r = run_step(s, topo, *comm).value();
  EXPECT_GT(r.step_s, 0);
  // Forward compute records of micro-batch 0 per virtual stage: one per layer, and one for the
  // MTP stage and the loss stage, which hold no layer.
  std::map<int, int> ops;
  for (const OpRecord& op : r.ops) {
    if (op.kind == OpKind::kForward && op.micro == 0)
      ++ops[static_cast<int>(op.chunk * 8 + op.stage)];
  }
  for (int vi = 0; vi < 32; ++vi) {
    EXPECT_EQ(ops[vi], vi == 0 ? 3 : vi >= 30 ? 1 : 2) << vi;
  }
  // The MTP stage's pass is the MTP module (its projection and layer), the loss stage's the
  // two output layers (the model's and the MTP head's).
  const LayerCosts lc = layer_costs(s, true);
  EXPECT_DOUBLE_EQ(chunk_extra_seconds(s, lc, shape, 6, 3, PassKind::kForward), lc.mtp_fwd_s);
  EXPECT_DOUBLE_EQ(chunk_extra_seconds(s, lc, shape, 7, 3, PassKind::kForward),
                   2 * lc.output_fwd_s);
  EXPECT_NEAR(lc.mtp_fwd_s + 2 * lc.output_fwd_s, lc.logits_fwd_s, 1e-12 * lc.logits_fwd_s);
  EXPECT_DOUBLE_EQ(chunk_extra_seconds(s, lc, shape, 5, 3, PassKind::kForward), 0.0);
}

TEST(PipelineLayout, MemoryPerStageFollowsTheLayout) {
  const Scenario s = deepseek_like();
  const MemoryReport m = estimate_memory(s);
  const LayerParams dense = layer_params(s, false);
  const LayerParams moe = layer_params(s, true);
  const double wb = 2;  // bf16 weights
  // Stage 0: virtual stages 0 (3 dense layers), 8, 16, 24 (2 MoE layers each); stage 7: 7, 15,
  // 23 (2 each) and the loss stage (none); stage 6: 6, 14, 22 and the MTP stage.
  EXPECT_NEAR(m.stages[0].bytes("weights"), wb * (3 * dense.dense + 6 * moe.dense), 1);
  EXPECT_NEAR(m.stages[0].bytes("expert_weights"), wb * 6 * moe.expert, 1);
  EXPECT_NEAR(m.stages[7].bytes("weights"), wb * 6 * moe.dense, 1);
  EXPECT_NEAR(m.stages[3].bytes("weights"), wb * 8 * moe.dense, 1);
  const double proj = 2.0 * s.model.hidden * s.model.hidden;
  EXPECT_NEAR(m.stages[6].bytes("weights"), wb * (7 * moe.dense + proj), 1);
  // The MTP module's activations on its stage only; the logits on the loss's stage.
  for (int st = 0; st < 8; ++st) {
    EXPECT_EQ(m.stages[static_cast<std::size_t>(st)].bytes("mtp_activations") > 0, st == 6) << st;
    EXPECT_EQ(m.stages[static_cast<std::size_t>(st)].bytes("logits") > 0, st == 7) << st;
  }
  // The MTP stage keeps a copy of the embedding (Megatron builds one where the modules run).
  const double emb = static_cast<double>(s.model.vocab) * s.model.hidden;
  EXPECT_NEAR(m.stages[6].bytes("embeddings"), m.stages[0].bytes("embeddings"), 1);
  EXPECT_GT(m.stages[0].bytes("embeddings"), emb * wb);
  // The same model with the default split (61 layers over 32: the first and last one short)
  // puts 2 layers on the loss's stage instead.
  Scenario d = s;
  d.par.layout.clear();
  const MemoryReport md = estimate_memory(d);
  EXPECT_NE(md.stages[7].bytes("weights"), m.stages[7].bytes("weights"));
}

TEST(PipelineLayout, ScenarioErrorsNameTheKey) {
  auto bad = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml",
                           {"parallel.layout=Et*|ttL"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("parallel.layout"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("position 4"), std::string::npos) << bad.error().message;
  const auto topo = layout_toy();
  Scenario s = layout_tiny({"parallel.layout=Et|ttL"});
  auto v = validate(s, topo);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("parallel.layout"), std::string::npos);
  EXPECT_NE(v.error().message.find("3 transformer layers"), std::string::npos) << v.error().message;
  s = layout_tiny({"parallel.layout=Ett|ttL", "parallel.first_stage_layers=2"});
  ASSERT_FALSE(validate(s, topo).ok());
  EXPECT_NE(validate(s, topo).error().message.find("give one or the other"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::workload
