// The pipeline schedule as pure functions: Megatron-LM's op order for 1F1B (pp 2 and 4) and the
// interleaved schedule (vpp 2), warm-up and cool-down counts, every micro-batch's forward before
// its backward on each stage, every pipeline send matched by exactly one receive, a schedule
// that runs to the end without deadlock, and the layer split.
#include "stepsim/workload/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

namespace stepsim::workload {
namespace {

// "F0 B0 F1.1" style: kind, micro-batch, and ".chunk" when interleaved.
std::string text(const std::vector<PipelinePass>& ops, bool chunks) {
  std::string out;
  for (const PipelinePass& p : ops) {
    if (!out.empty()) out += ' ';
    out += p.kind == PassKind::kForward ? 'F' : 'B';
    out += std::to_string(p.micro);
    if (chunks) out += "." + std::to_string(p.chunk);
  }
  return out;
}

TEST(PipelineSchedule, OneFOneBOnTwoStages) {
  const PipelineShape shape{2, 1, 4};
  EXPECT_EQ(text(stage_schedule(shape, 0), false), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(text(stage_schedule(shape, 1), false), "F0 B0 F1 B1 F2 B2 F3 B3");
}

TEST(PipelineSchedule, OneFOneBOnFourStagesWarmsUpPMinusSMinusOne) {
  const PipelineShape shape{4, 1, 8};
  EXPECT_EQ(text(stage_schedule(shape, 0), false),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(text(stage_schedule(shape, 2), false),
            "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  for (int st = 0; st < 4; ++st) EXPECT_EQ(warmup_passes(shape, st), 4 - st - 1);
  // Fewer micro-batches than stages: the warm-up is every forward.
  EXPECT_EQ(warmup_passes(PipelineShape{4, 1, 2}, 0), 2);
  EXPECT_EQ(text(stage_schedule(PipelineShape{4, 1, 2}, 0), false), "F0 F1 B0 B1");
}

TEST(PipelineSchedule, InterleavedRotatesChunksEveryPMicroBatches) {
  // Megatron-LM's interleaved order for pp 2, vpp 2, 4 micro-batches: forwards go chunk 0 for
  // micro-batches 0-1, chunk 1 for 0-1, chunk 0 for 2-3, ...; backwards the chunks reversed.
  const PipelineShape shape{2, 2, 4};
  EXPECT_EQ(warmup_passes(shape, 0), 4);  // (2 - 0 - 1) x 2 + (2 - 1) x 2
  EXPECT_EQ(warmup_passes(shape, 1), 2);
  EXPECT_EQ(text(stage_schedule(shape, 0), true),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(text(stage_schedule(shape, 1), true),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
}

// Runs `check` on pipelines of one and several stages, with and without interleaving, with
// fewer micro-batches than stages and with three chunks.
void for_each_shape(void (*check)(const PipelineShape&)) {
  for (const PipelineShape& shape :
       {PipelineShape{1, 1, 3}, PipelineShape{2, 1, 4}, PipelineShape{4, 1, 8},
        PipelineShape{4, 1, 2}, PipelineShape{2, 2, 4}, PipelineShape{4, 2, 8},
        PipelineShape{4, 3, 4}, PipelineShape{1, 2, 2}}) {
    SCOPED_TRACE(std::to_string(shape.stages) + "x" + std::to_string(shape.chunks) + " m" +
                 std::to_string(shape.micro_batches));
    check(shape);
  }
}

// Properties of every shape: each (kind, chunk, micro-batch) exactly once per stage; the
// warm-up forwards lead and as many backwards close (the cool-down); forward before backward.
void check_stage_properties(const PipelineShape& shape) {
  for (int st = 0; st < shape.stages; ++st) {
    const auto ops = stage_schedule(shape, st);
    const int total = shape.chunks * shape.micro_batches;
    ASSERT_EQ(ops.size(), static_cast<std::size_t>(2 * total));
    std::set<std::tuple<PassKind, int, int>> seen;
    for (const PipelinePass& p : ops) {
      EXPECT_TRUE(seen.emplace(p.kind, p.chunk, p.micro).second) << text(ops, true);
      if (p.kind != PassKind::kBackward) continue;
      EXPECT_TRUE(seen.contains({PassKind::kForward, p.chunk, p.micro}))
          << "stage " << st << ": B" << p.micro << "." << p.chunk << " before its forward";
    }
    const int warmup = warmup_passes(shape, st);
    int lead = 0;
    while (lead < static_cast<int>(ops.size()) && ops[lead].kind == PassKind::kForward) ++lead;
    int tail = 0;
    while (tail < static_cast<int>(ops.size()) &&
           ops[ops.size() - 1 - tail].kind == PassKind::kBackward) {
      ++tail;
    }
    // The steady state starts with one more forward (and ends with one more backward) unless
    // the warm-up is every forward.
    EXPECT_EQ(lead, warmup == total ? total : warmup + 1) << "stage " << st;
    EXPECT_EQ(tail, warmup == total ? total : warmup + 1) << "stage " << st;
  }
}

TEST(PipelineSchedule, EveryShapeRunsEachPassOnceForwardFirst) {
  for_each_shape(check_stage_properties);
}

// Runs every stage's schedule as far as inputs allow (the executors' rule) and counts the
// pipeline sends and receives: each cross-stage input is one send from its producer, and no
// producer's output goes to two receivers. The schedule must finish (no deadlock).
void check_sends_and_progress(const PipelineShape& shape) {
  const int P = shape.stages;
  std::vector<std::vector<PipelinePass>> ops(static_cast<std::size_t>(P));
  for (int st = 0; st < P; ++st) ops[static_cast<std::size_t>(st)] = stage_schedule(shape, st);
  std::set<std::tuple<int, PassKind, int, int>> done;           // stage, kind, chunk, micro
  std::map<std::tuple<int, PassKind, int, int>, int> received;  // producer -> receivers
  std::vector<std::size_t> next(static_cast<std::size_t>(P), 0);
  int sends = 0;
  for (bool moved = true; moved;) {
    moved = false;
    for (int st = 0; st < P; ++st) {
      auto& n = next[static_cast<std::size_t>(st)];
      const auto& mine = ops[static_cast<std::size_t>(st)];
      for (; n < mine.size(); ++n) {
        const PipelinePass& p = mine[n];
        const PassInput in = input_of(shape, st, p.kind, p.chunk);
        if (!in.external) {
          const auto producer = std::make_tuple(in.stage, in.kind, in.chunk, p.micro);
          if (!done.contains(producer)) break;
          if (in.stage != st) {
            ++sends;
            EXPECT_EQ(++received[producer], 1) << "an output received twice";
            // Sends go to the neighbouring stage (or wrap from the last to the first).
            EXPECT_TRUE(in.stage == (st + 1) % P || in.stage == (st + P - 1) % P);
          }
        }
        done.emplace(st, p.kind, p.chunk, p.micro);
        moved = true;
      }
    }
  }
  for (int st = 0; st < P; ++st) {
    EXPECT_EQ(next[static_cast<std::size_t>(st)], ops[static_cast<std::size_t>(st)].size())
        << "stage " << st << " deadlocked";
  }
  // Forward: every virtual stage but the last sends to the next; backward: every one but the
  // first. Sends within a stage (one stage, several chunks) are not sends.
  const int virtual_stages = P * shape.chunks;
  const int expected = P == 1 ? 0 : 2 * (virtual_stages - 1) * shape.micro_batches;
  EXPECT_EQ(sends, expected);
}

TEST(PipelineSchedule, SendsMatchReceivesAndNothingDeadlocks) {
  for_each_shape(check_sends_and_progress);
}

TEST(PipelineSchedule, InputsComeFromTheNeighbouringVirtualStage) {
  const PipelineShape shape{4, 2, 8};
  // The first virtual stage reads the batch.
  EXPECT_TRUE(input_of(shape, 0, PassKind::kForward, 0).external);
  // Stage 0's second chunk continues from the last stage's first chunk.
  const PassInput wrap = input_of(shape, 0, PassKind::kForward, 1);
  EXPECT_FALSE(wrap.external);
  EXPECT_EQ(wrap.stage, 3);
  EXPECT_EQ(wrap.chunk, 0);
  // The last virtual stage's backward starts from its own forward: no send.
  const PassInput turn = input_of(shape, 3, PassKind::kBackward, 1);
  EXPECT_EQ(turn.stage, 3);
  EXPECT_EQ(turn.chunk, 1);
  EXPECT_EQ(turn.kind, PassKind::kForward);
  // Backward of stage 3, chunk 0 comes from stage 0, chunk 1.
  const PassInput back = input_of(shape, 3, PassKind::kBackward, 0);
  EXPECT_EQ(back.stage, 0);
  EXPECT_EQ(back.chunk, 1);
  EXPECT_EQ(back.kind, PassKind::kBackward);
}

TEST(PipelineSchedule, LayersSplitWithTheEndsOneShort) {
  // 126 layers on 16 stages (Llama 3 405B): 8 per stage, the first and last 7.
  const PipelineShape shape{16, 1, 16};
  int sum = 0;
  for (int st = 0; st < 16; ++st) {
    const int n = layers_in(shape, 126, st, 0);
    EXPECT_EQ(n, st == 0 || st == 15 ? 7 : 8) << st;
    EXPECT_EQ(first_layer(shape, 126, st, 0), sum);
    sum += n;
  }
  EXPECT_EQ(sum, 126);
  // Even splits stay even, interleaved chunks included: chunk c of stage s holds layers
  // (c x stages + s) x q onwards.
  const PipelineShape inter{2, 2, 4};
  for (int c = 0; c < 2; ++c) {
    for (int st = 0; st < 2; ++st) {
      EXPECT_EQ(layers_in(inter, 8, st, c), 2);
      EXPECT_EQ(first_layer(inter, 8, st, c), (c * 2 + st) * 2);
    }
  }
}

TEST(PipelineSchedule, UnevenLayoutsGiveTheEndsTheirLayers) {
  // 61 layers (DeepSeek-V3's) on 16 stages: the first holds 1, the other 15 hold 4 each.
  const PipelineShape shape{16, 1, 16, 1, 0};
  int sum = 0;
  for (int st = 0; st < 16; ++st) {
    const int n = layers_in(shape, 61, st, 0);
    EXPECT_EQ(n, st == 0 ? 1 : 4) << st;
    EXPECT_EQ(first_layer(shape, 61, st, 0), sum);
    sum += n;
  }
  EXPECT_EQ(sum, 61);
  // Both ends fixed, interleaved: virtual stages 0 and 7 of 4 x 2 hold 2 and 3, the others 5.
  const PipelineShape inter{4, 2, 8, 2, 3};
  sum = 0;
  for (int c = 0; c < 2; ++c) {
    for (int st = 0; st < 4; ++st) {
      const int vi = c * 4 + st;
      EXPECT_EQ(layers_in(inter, 35, st, c), vi == 0 ? 2 : vi == 7 ? 3 : 5) << vi;
      EXPECT_EQ(first_layer(inter, 35, st, c), sum);
      sum += layers_in(inter, 35, st, c);
    }
  }
  EXPECT_EQ(sum, 35);
}

}  // namespace
}  // namespace stepsim::workload
