// Data-parallel communication: gradient buckets go when full (or on a flush) with the bucket's
// bytes, dense over the DP group and expert over the expert-DP group, all-reduce for ZeRO 0 and
// reduce-scatter otherwise; ZeRO 1/2's parameter gather covers the bf16 parameters in buckets;
// FSDP gathers one layer's parameters.
#include "stepsim/workload/data_parallel_comm.hpp"

#include <gtest/gtest.h>

namespace stepsim::workload {
namespace {

using collective::Kind;

Scenario dp8() {
  Scenario s;
  s.par.tp = 2;
  s.par.dp = 8;
  s.par.ep = 4;
  s.par.pp = 2;
  s.par.bucket = 1000;
  s.par.zero = 1;
  return s;
}

TEST(GradientBuckets, FullBucketsGoAndAFlushTakesTheRest) {
  const Scenario s = dp8();
  const Placement place{2, 1, 8, 2};
  GradientBuckets b(s, place, 1);
  b.add({600, 0});
  EXPECT_FALSE(b.next(GradClass::kDense, false).has_value());
  b.add({700, 0});
  const auto first = b.next(GradClass::kDense, false);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->bytes, 1000);
  EXPECT_EQ(first->kind, Kind::kReduceScatter);
  EXPECT_EQ(first->group, CommGroup::kDp);
  // Stage 1's data-parallel ranks: TP 2, DP 8, so 16 apart from stage 0, 2 apart in DP.
  EXPECT_EQ(first->gpus, (std::vector<std::uint32_t>{16, 18, 20, 22, 24, 26, 28, 30}));
  EXPECT_FALSE(b.next(GradClass::kDense, false).has_value());
  EXPECT_EQ(b.pending(GradClass::kDense), 300.0);
  const auto rest = b.next(GradClass::kDense, true);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->bytes, 300);
  EXPECT_FALSE(b.next(GradClass::kDense, true).has_value());
}

TEST(GradientBuckets, ExpertGradientsGoOverTheExpertDataParallelGroup) {
  Scenario s = dp8();
  s.par.zero = 0;
  const Placement place{2, 1, 8, 2};
  GradientBuckets b(s, place, 0);
  b.add({0, 2500});
  EXPECT_FALSE(b.next(GradClass::kDense, true).has_value());
  const auto op = b.next(GradClass::kExpert, false);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, Kind::kAllReduce);  // ZeRO 0
  // dp / ep = 2 ranks, ep = 4 data-parallel ranks apart.
  EXPECT_EQ(op->gpus, (std::vector<std::uint32_t>{0, 8}));
  EXPECT_EQ(b.pending(GradClass::kExpert), 1500.0);
}

TEST(DataParallelComm, TheParameterGatherCoversTheBf16Parameters) {
  const Scenario s = dp8();
  const Placement place{2, 1, 8, 2};
  const auto ops = param_gather_ops(s, place, 0, 1250);  // 2,500 bytes: 1000 + 1000 + 500
  ASSERT_EQ(ops.size(), 3u);
  std::int64_t sum = 0;
  for (const CommOp& op : ops) {
    EXPECT_EQ(op.kind, Kind::kAllGather);
    EXPECT_LE(op.bytes, 1000);
    EXPECT_EQ(op.gpus.size(), 8u);
    sum += op.bytes;
  }
  EXPECT_EQ(sum, 2500);
  EXPECT_TRUE(param_gather_ops(s, place, 0, 0).empty());
  // FSDP: one layer's parameters on this GPU, bf16.
  const CommOp f = fsdp_gather_op(s, place, 0);
  const LayerParams lp = layer_params(s);
  EXPECT_EQ(f.bytes, static_cast<std::int64_t>((lp.dense + lp.expert) * 2));
  EXPECT_EQ(f.kind, Kind::kAllGather);
}

}  // namespace
}  // namespace stepsim::workload
