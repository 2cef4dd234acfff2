// A layer's collectives: TP all-gather + reduce-scatter pairs with sequence parallelism (the
// order reversed in the backward) or all-reduces without, CP's K/V gather, EP's all-to-alls on
// EP consecutive data-parallel ranks; and the pipeline send's bytes.
#include "stepsim/workload/layer_comm.hpp"

#include "stepsim/workload/compute_cost.hpp"

#include <gtest/gtest.h>

namespace stepsim::workload {
namespace {

using collective::Kind;

Scenario moe() {
  Scenario s;
  s.model.hidden = 1024;
  s.model.heads = 16;
  s.model.kv_heads = 4;
  s.model.seq_len = 4096;
  s.model.experts = 8;
  s.model.top_k = 2;
  s.par.tp = 2;
  s.par.cp = 2;
  s.par.ep = 4;
  s.par.dp = 8;
  s.par.pp = 2;
  s.par.micro_batch = 1;
  return s;
}

TEST(LayerComm, SequenceParallelTpThenCpThenEp) {
  const Scenario s = moe();
  const Placement place{2, 2, 8, 2};
  const auto fwd = layer_collectives(s, place, 1, PassKind::kForward);
  ASSERT_EQ(fwd.size(), 4u + 1u + 2u);
  const std::int64_t act = 4096 / 2 * 1024 * 2;  // tokens per GPU x h x bf16
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(fwd[i].group, CommGroup::kTp);
    EXPECT_EQ(fwd[i].kind, i % 2 == 0 ? Kind::kAllGather : Kind::kReduceScatter);
    EXPECT_EQ(fwd[i].bytes, act);
    // Stage 1's TP group: ranks 32 and 33 (TP fastest, then CP 2, DP 8).
    EXPECT_EQ(fwd[i].gpus, (std::vector<std::uint32_t>{32, 33}));
  }
  EXPECT_EQ(fwd[4].group, CommGroup::kCp);
  EXPECT_EQ(fwd[4].kind, Kind::kAllGather);
  EXPECT_EQ(fwd[4].bytes, 2 * (4096 / 2) * 2 * 4 * 64 * 2 / 2);  // K and V of every CP rank
  EXPECT_EQ(fwd[4].gpus, (std::vector<std::uint32_t>{32, 34}));
  for (int i = 5; i < 7; ++i) {
    EXPECT_EQ(fwd[i].group, CommGroup::kEp);
    EXPECT_EQ(fwd[i].kind, Kind::kAllToAll);
    EXPECT_EQ(fwd[i].bytes, act * 2 / 2);  // top-2 routed, divided by TP
    // MoE parallel folding: EP (expert TP = tp 2) runs over the stage's GPUs 2 apart, over the
    // CP positions before the DP ranks (Megatron-Core's expert grid).
    EXPECT_EQ(fwd[i].gpus, (std::vector<std::uint32_t>{32, 34, 36, 38}));
  }
  const auto bwd = layer_collectives(s, place, 1, PassKind::kBackward);
  ASSERT_EQ(bwd.size(), fwd.size());
  EXPECT_EQ(bwd[0].kind, Kind::kReduceScatter);
  EXPECT_EQ(bwd[1].kind, Kind::kAllGather);
  EXPECT_EQ(bwd[4].kind, Kind::kReduceScatter);
}

TEST(LayerComm, DenseLayersOfAnMoeModelHaveNoAllToAll) {
  Scenario s = moe();
  s.model.dense_layers = 1;
  const Placement place{2, 2, 8, 2};
  const auto dense = layer_collectives(s, place, 1, PassKind::kForward, false);
  ASSERT_EQ(dense.size(), 4u + 1u);
  for (const CommOp& op : dense) EXPECT_NE(op.group, CommGroup::kEp);
  EXPECT_EQ(layer_collectives(s, place, 1, PassKind::kForward, true).size(), 4u + 1u + 2u);
}

TEST(LayerComm, TpOverlapCarriesTheGemmOfEachTpCollective) {
  Scenario s = moe();
  s.model.experts = 0;
  s.par.ep = 1;
  s.par.tp_overlap = true;
  const Placement place{2, 2, 8, 2};
  const LayerCosts lc = layer_costs(s);
  for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
    const auto ops = layer_collectives(s, place, 1, k);
    const auto& hide = k == PassKind::kForward ? lc.fwd_hide : lc.bwd_hide;
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(ops[i].overlap_s, hide[i]);
      EXPECT_GT(ops[i].overlap_s, 0);
      EXPECT_EQ(ops[i].overlap_chunks, 2);
    }
    EXPECT_EQ(ops[4].overlap_s, 0.0);  // CP's gather is not overlapped
  }
}

TEST(LayerComm, WithoutSequenceParallelismTwoAllReduces) {
  Scenario s = moe();
  s.par.sequence_parallel = false;
  s.par.cp = 1;
  s.model.experts = 0;
  const Placement place{2, 1, 8, 2};
  const auto ops = layer_collectives(s, place, 0, PassKind::kBackward);
  ASSERT_EQ(ops.size(), 2u);
  for (const CommOp& op : ops) EXPECT_EQ(op.kind, Kind::kAllReduce);
  // No TP: nothing.
  s.par.tp = 1;
  EXPECT_TRUE(layer_collectives(s, Placement{1, 1, 8, 2}, 0, PassKind::kForward).empty());
}

TEST(LayerComm, PipelineSendIsTheMicroBatchsActivationsOverTp) {
  Scenario s = moe();
  s.par.micro_batch = 2;
  EXPECT_EQ(pipeline_send_bytes(s), std::int64_t{2} * 4096 / 2 * 1024 * 2 / 2);
}

}  // namespace
}  // namespace stepsim::workload
