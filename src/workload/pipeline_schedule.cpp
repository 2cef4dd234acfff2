// Megatron-LM's 1F1B and interleaved 1F1B schedules (Narayanan et al., SC'21, section 2.2;
// megatron/core/pipeline_parallel/schedules.py): the pass order per stage, the sends between
// stages and the layer split (see pipeline_schedule.hpp).
#include "stepsim/workload/pipeline_schedule.hpp"

#include <algorithm>

namespace stepsim::workload {

int virtual_stage(const PipelineShape& shape, int stage, int chunk) {
  if (shape.dualpipe) return chunk == 0 ? stage : shape.stages - 1 - stage;
  return chunk * shape.stages + stage;
}

int chunk_micro_batches(const PipelineShape& shape) {
  return shape.dualpipe ? shape.micro_batches / 2 : shape.micro_batches;
}

int warmup_passes(const PipelineShape& shape, int stage) {
  const int p = shape.stages;
  const int v = shape.chunks;
  const int total = shape.micro_batches * v;
  if (v == 1) return std::min(p - stage - 1 + shape.extra_warmup, shape.micro_batches);
  return std::min((p - stage - 1) * 2 + (v - 1) * p + shape.extra_warmup, total);
}

std::vector<PipelinePass> stage_schedule(const PipelineShape& shape, int stage) {
  if (shape.dualpipe) return dualpipe_schedule(shape, stage);
  const int p = shape.stages;
  const int v = shape.chunks;
  const int total = shape.micro_batches * v;
  // The k-th forward (backward) of the stage: its chunk and micro-batch.
  auto pass = [&](int k, PassKind kind) {
    const int c = (k % (p * v)) / p;
    const int chunk = kind == PassKind::kForward ? c : v - 1 - c;
    const int micro = v == 1 ? k : (k / (p * v)) * p + k % p;
    return PipelinePass{kind, chunk, micro};
  };
  std::vector<PipelinePass> ops;
  ops.reserve(static_cast<std::size_t>(2 * total));
  const int warmup = warmup_passes(shape, stage);
  int f = 0;
  int b = 0;
  for (; f < warmup; ++f) ops.push_back(pass(f, PassKind::kForward));
  while (f < total) {
    ops.push_back(pass(f++, PassKind::kForward));
    ops.push_back(pass(b++, PassKind::kBackward));
  }
  for (; b < total; ++b) ops.push_back(pass(b, PassKind::kBackward));
  return ops;
}

PassInput input_of(const PipelineShape& shape, int stage, PassKind kind, int chunk) {
  const int p = shape.stages;
  const int v = shape.chunks;
  if (shape.dualpipe) {
    // Chunk 0 runs from stage 0 to p - 1, chunk 1 back; each turns around at its last stage.
    const int step = chunk == 0 ? 1 : -1;
    const int head = chunk == 0 ? 0 : p - 1;
    const int tail = p - 1 - head;
    if (kind == PassKind::kForward) {
      if (stage == head) return {true, stage, chunk, kind};
      return {false, stage - step, chunk, kind};
    }
    if (stage == tail) return {false, stage, chunk, PassKind::kForward};
    return {false, stage + step, chunk, kind};
  }
  if (kind == PassKind::kForward) {
    if (stage > 0) return {false, stage - 1, chunk, kind};
    if (chunk > 0) return {false, p - 1, chunk - 1, kind};
    return {true, stage, chunk, kind};
  }
  if (stage < p - 1) return {false, stage + 1, chunk, kind};
  if (chunk < v - 1) return {false, 0, chunk + 1, kind};
  return {false, stage, chunk, PassKind::kForward};  // the last virtual stage turns around
}

int layers_in(const PipelineShape& shape, int layers, int stage, int chunk) {
  const int pv = shape.dualpipe ? shape.stages : shape.stages * shape.chunks;
  const int vi = virtual_stage(shape, stage, chunk);
  if (!shape.layout.empty()) return shape.layout[static_cast<std::size_t>(vi)];
  if (shape.first_layers > 0 || shape.last_layers > 0) {
    if (vi == 0 && shape.first_layers > 0) return shape.first_layers;
    if (vi == pv - 1 && shape.last_layers > 0) return shape.last_layers;
    const int fixed = (shape.first_layers > 0 ? 1 : 0) + (shape.last_layers > 0 ? 1 : 0);
    return (layers - shape.first_layers - shape.last_layers) / std::max(1, pv - fixed);
  }
  const int q = (layers + pv - 1) / pv;
  const int d = pv * q - layers;
  return q - ((vi < (d + 1) / 2 || vi >= pv - d / 2) ? 1 : 0);
}

int first_layer(const PipelineShape& shape, int layers, int stage, int chunk) {
  int n = 0;
  const int end = virtual_stage(shape, stage, chunk);
  for (int vi = 0; vi < end; ++vi) {
    // DualPipe: model stage vi is chunk 0 of stage vi.
    n += shape.dualpipe ? layers_in(shape, layers, vi, 0)
                        : layers_in(shape, layers, vi % shape.stages, vi / shape.stages);
  }
  return n;
}

bool holds_mtp(const PipelineShape& shape, int stage, int chunk) {
  const int vi = virtual_stage(shape, stage, chunk);
  return shape.mtp_virtual >= 0 ? vi == shape.mtp_virtual : holds_loss(shape, stage, chunk);
}

int mtp_stage(const PipelineShape& shape) {
  return shape.mtp_virtual >= 0 ? shape.mtp_virtual % shape.stages : shape.stages - 1;
}

bool holds_loss(const PipelineShape& shape, int stage, int chunk) {
  if (shape.dualpipe) return virtual_stage(shape, stage, chunk) == shape.stages - 1;
  return stage == shape.stages - 1 && chunk == shape.chunks - 1;
}

}  // namespace stepsim::workload
