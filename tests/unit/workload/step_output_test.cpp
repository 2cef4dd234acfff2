// The step's result as the writers' plain rows (workload/step_output.hpp): codes, names, each
// op's GPU, each flow's stage and counters, the status word.
#include "stepsim/workload/step_output.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace stepsim::workload {
namespace {

StepResult one_job() {
  StepResult r;
  r.step_s = 2.5e-3;
  r.exposed_s[static_cast<int>(CommGroup::kDp)] = 1e-4;
  r.ops.push_back(OpRecord{0, 3, OpKind::kComm, CommGroup::kEp, 2, 1, 7, 1e-3, 2e-3});
  r.colls.push_back(CollectiveRecord{0, 0, 1, CommGroup::kTp, collective::Kind::kAllGather, 64, 4,
                                     kNoMembers, 0, 1, 2});
  r.colls.push_back(CollectiveRecord{1, 0, 3, CommGroup::kDp, collective::Kind::kAllReduce, 128, 8,
                                     kNoMembers, 1, 2, 3});
  FlowRow f;
  f.collective = 1;
  f.repeats = 4;
  f.bytes = 4096;
  f.packets = 1;
  f.ecn_marked = 1;
  f.start_ps = 10;
  f.first_byte_ps = 20;
  f.end_ps = 30;
  f.group = CommGroup::kDp;
  f.kind = collective::Kind::kAllReduce;
  r.flows.push_back(f);
  return r;
}

TEST(StepOutput, RowsCarryTheCodesTheirNamesAndEachOpsGpu) {
  const output::StepRows rows = step_rows(one_job(), 8);
  ASSERT_EQ(rows.group_names.size(), output::kGroups);
  EXPECT_EQ(rows.group_names[static_cast<int>(CommGroup::kEp)], "ep");
  ASSERT_EQ(rows.op_names.size(), static_cast<std::size_t>(kOpKinds));
  EXPECT_EQ(rows.op_names[static_cast<int>(output::OpCode::kWait)], "wait");
  ASSERT_EQ(rows.ops.size(), 1u);
  EXPECT_EQ(rows.ops[0].gpu, 24u);  // stage 3 x 8 GPUs between stages
  EXPECT_EQ(rows.ops[0].kind, static_cast<std::uint16_t>(output::OpCode::kComm));
  EXPECT_EQ(rows.group_names[rows.ops[0].group], "ep");
  EXPECT_EQ(rows.ops[0].layer, 7u);
  EXPECT_EQ(rows.colls[1].kind, static_cast<std::uint16_t>(collective::Kind::kAllReduce));
  EXPECT_EQ(rows.figures.exposed_s[static_cast<int>(CommGroup::kDp)], 1e-4);
  EXPECT_EQ(rows.figures.status, "complete");
}

TEST(StepOutput, AFlowTakesItsCollectivesStageAndItsCountersAsConnectionFlowColumns) {
  const output::StepRows rows = step_rows(one_job(), 8);
  ASSERT_EQ(rows.flows.size(), 1u);
  const output::FlowsRow& f = rows.flows[0];
  EXPECT_EQ(f.stage, 3u);  // collective 1 ran on stage 3
  EXPECT_EQ(f.repeats, 4u);
  EXPECT_EQ(f.c.bytes, 4096u);
  EXPECT_EQ(f.c.ecn_marked, 1u);
  EXPECT_EQ(f.c.first_post_ps, 10);
  EXPECT_EQ(f.c.first_byte_ps, 20);
  EXPECT_EQ(f.c.last_done_ps, 30);
}

TEST(StepOutput, AMultiJobRunsOpsRunOnTheirJobsStageGpus) {
  StepResult r = one_job();
  JobResult a;
  a.name = "a";
  a.stage_gpu = {0, 4};
  JobResult b;
  b.name = "b";
  b.stage_gpu = {8, 9, 10, 11};
  b.exposed_s[0] = 5e-5;
  r.jobs = {a, b};
  r.ops[0].job = 1;
  const output::StepRows rows = step_rows(r, 8);
  EXPECT_EQ(rows.ops[0].gpu, 11u);  // job b's stage 3, not 3 x 8
  EXPECT_EQ(rows.ops[0].job, 1u);
  ASSERT_EQ(rows.jobs.size(), 2u);
  EXPECT_EQ(rows.jobs[1].name, "b");
  EXPECT_EQ(rows.jobs[1].stage_gpu, b.stage_gpu);
  EXPECT_EQ(rows.jobs[1].exposed_s[0], 5e-5);
}

// The rows made on demand (for the HDF5 writer) are the held rows byte for byte, from any row
// on, and the held vectors stay empty.
TEST(StepOutput, RowsMadeOnDemandAreTheHeldRows) {
  StepResult r = one_job();
  r.ops.push_back(OpRecord{0, 1, OpKind::kBackward, CommGroup::kTp, 5, 0, 3, 4e-3, 6e-3});
  r.ops.push_back(OpRecord{0, 0, OpKind::kWait, CommGroup::kTp, 6, 0, 0, 7e-3, 8e-3});
  const output::StepRows held = step_rows(r, 8);
  const output::StepRows made = step_rows(r, 8, RowsHeld::kOnDemand);
  EXPECT_TRUE(made.ops.empty());
  EXPECT_TRUE(made.colls.empty());
  ASSERT_EQ(made.ops_fill.rows, held.ops.size());
  ASSERT_EQ(made.colls_fill.rows, held.colls.size());
  for (std::size_t first = 0; first < held.ops.size(); ++first) {
    const std::size_t n = held.ops.size() - first;
    std::vector<output::OpsRow> ops(n);
    made.ops_fill.fill(first, n, ops.data());
    EXPECT_EQ(std::memcmp(ops.data(), held.ops.data() + first, n * sizeof(output::OpsRow)), 0)
        << first;
  }
  std::vector<output::CollectivesRow> colls(held.colls.size());
  made.colls_fill.fill(0, colls.size(), colls.data());
  EXPECT_EQ(std::memcmp(colls.data(), held.colls.data(), colls.size() * sizeof(colls[0])), 0);
  EXPECT_EQ(held.ops[1].gpu, 8u);  // stage 1 x 8
}

TEST(StepOutput, TheStatusSaysWhyAStepDidNotComplete) {
  StepResult r;
  EXPECT_STREQ(step_status(r), "complete");
  r.complete = false;
  EXPECT_STREQ(step_status(r), "stopped_at_end");
  r.failed_transfers = 2;
  EXPECT_STREQ(step_status(r), "failed_transfers");
  r.interrupted = true;
  EXPECT_STREQ(step_status(r), "interrupted");
  EXPECT_EQ(step_rows(r, 1).figures.status, "interrupted");
}

}  // namespace
}  // namespace stepsim::workload
