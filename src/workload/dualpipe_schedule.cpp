// DeepSeek's DualPipe (DeepSeek-V3 technical report, section 3.2.1, Figure 5 and Table 2; the
// order of deepseek-ai/DualPipe's DualPipe.step): each of the p stages holds model stage s
// (chunk 0, micro-batches fed at stage 0) and model stage p - 1 - s (chunk 1, fed at stage
// p - 1). A stage's order goes in eight steps; in its own terms "near" is the direction whose
// first model stages it holds early (chunk 0 on the first half of the stages, chunk 1 on the
// second) and "far" the other. With h = p / 2 and r = min(s, p - 1 - s):
//   1. (h - r - 1) x 2 forwards of near;            2. r + 1 x (F near, F far);
//   3. h - r - 1 x (B far split, W, F far);          4. m/2 - p + r + 1 x (F near & B far,
//      F far & B near) as overlapped pairs (the two middle stages run their first pair apart);
//   5. h - r - 1 x (B far, F far & B near);          6. r + 1 x (B far, B near), the second
//      half of them split (zero bubble);             7. h - r - 1 x (W, B near split);
//   8. r + 1 x W.
// A split backward runs its input gradient at once and leaves its weight gradient to the next W
// (first in, first out).
#include <algorithm>
#include <deque>
#include <utility>

#include "stepsim/workload/pipeline_schedule.hpp"

namespace stepsim::workload {

namespace {

class DualPipeOrder {
 public:
  DualPipeOrder(const PipelineShape& shape, int stage) : p_(shape.stages) {
    second_ = stage >= p_ / 2 ? 1 : 0;
    ops_.reserve(static_cast<std::size_t>(3 * shape.micro_batches));
  }
  // `phase` 0: near, 1: far.
  void forward(int phase, int partner = -1) {
    const int c = chunk(phase);
    ops_.push_back({PassKind::kForward, c, f_[c]++, GradPart::kWhole, partner});
  }
  void backward(int phase, bool split = false, int partner = -1) {
    const int c = chunk(phase);
    const GradPart g = split ? GradPart::kInput : GradPart::kWhole;
    if (split) w_.emplace_back(c, b_[c]);
    ops_.push_back({PassKind::kBackward, c, b_[c]++, g, partner});
  }
  void weight() {
    const auto [c, m] = w_.front();
    w_.pop_front();
    ops_.push_back({PassKind::kBackward, c, m, GradPart::kWeight, -1});
  }
  // The forward of `fwd` and the backward of the other phase as one pair.
  void pair(int fwd) {
    forward(fwd, chunk(1 - fwd));
    backward(1 - fwd, false, chunk(fwd));
  }
  std::vector<PipelinePass> take() { return std::move(ops_); }

 private:
  [[nodiscard]] int chunk(int phase) const { return phase ^ second_; }
  int p_;
  int second_ = 0;
  int f_[2] = {0, 0};
  int b_[2] = {0, 0};
  std::deque<std::pair<int, int>> w_;  // split backwards waiting for their W: (chunk, micro)
  std::vector<PipelinePass> ops_;
};

}  // namespace

std::vector<PipelinePass> dualpipe_schedule(const PipelineShape& shape, int stage) {
  const int p = shape.stages;
  const int h = p / 2;
  const int r = std::min(stage, p - 1 - stage);
  const bool middle = r == h - 1;
  DualPipeOrder o(shape, stage);
  for (int i = 0; i < (h - r - 1) * 2; ++i) o.forward(0);
  for (int i = 0; i < r + 1; ++i) {
    o.forward(0);
    o.forward(1);
  }
  for (int i = 0; i < h - r - 1; ++i) {
    o.backward(1, true);
    o.weight();
    o.forward(1);
  }
  const int steady = shape.micro_batches / 2 - p + r + 1;
  for (int i = 0; i < steady; ++i) {
    if (i == 0 && middle) {  // DualPipe runs the middle stages' first pair apart (less bubble)
      o.forward(0);
      o.backward(1);
    } else {
      o.pair(0);
    }
    o.pair(1);
  }
  for (int i = 0; i < h - r - 1; ++i) {
    o.backward(1);
    o.pair(1);
  }
  // The second half of these backwards are split: the first split one is the far direction's
  // when r is odd, the near's when r is even.
  bool split = false;
  for (int i = 0; i < r + 1; ++i) {
    if (i == (r + 1) / 2 && r % 2 == 1) split = true;
    o.backward(1, split);
    if (i == (r + 1) / 2 && r % 2 == 0) split = true;
    o.backward(0, split);
  }
  for (int i = 0; i < h - r - 1; ++i) {
    o.weight();
    o.backward(0, true);
  }
  for (int i = 0; i < r + 1; ++i) o.weight();
  return o.take();
}

std::vector<int> peak_in_flight(const PipelineShape& shape, int stage) {
  std::vector<int> held(static_cast<std::size_t>(shape.chunks), 0);
  std::vector<int> peak = held;
  int most = 0;
  auto note = [&] {
    int n = 0;
    for (const int x : held) n += x;
    if (n > most) {
      most = n;
      peak = held;
    }
  };
  for (const PipelinePass& pass : stage_schedule(shape, stage)) {
    int& c = held[static_cast<std::size_t>(pass.chunk)];
    if (pass.kind == PassKind::kForward) {
      ++c;
      note();
    } else if (pass.grad != GradPart::kInput) {
      --c;
    }
  }
  return peak;
}

}  // namespace stepsim::workload
