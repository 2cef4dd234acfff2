// moe.overlap 1f1b (see ep_overlap.hpp). A stage's schedule holds w warm-up forwards, one more
// than plain 1F1B's (Megatron-Core's schedules.py adds it with overlap_moe_expert_parallel_comm:
// PipelineShape::extra_warmup); the steady state pairs the i-th forward with the (i - w)-th
// backward (without a pipeline the first forward runs alone: the backward after it needs its
// output). Each EP
// collective of a pass is hidden behind its share of the partner's layer compute; what is left
// blocks. While it runs beside compute, the kernels hold moe.comm_sms SMs: the compute beside
// them runs on the others, so it takes sms / (sms - comm_sms) as long over the overlap.
#include "src/workload/moe/ep_overlap.hpp"

#include <algorithm>

namespace stepsim::workload {

namespace {

std::size_t slot(const PipelineShape& shape, const PipelinePass& p) {
  const int kind = p.kind == PassKind::kForward ? 0 : 1;
  return static_cast<std::size_t>((kind * shape.chunks + p.chunk) * shape.micro_batches + p.micro);
}

}  // namespace

EpOverlap::EpOverlap(const Scenario& s, const PipelineShape& shape)
    : on_(s.moe.overlap == "1f1b" && s.model.experts > 0 && s.par.ep > 1),
      dual_(s.moe.overlap == "dualpipe" && s.model.experts > 0 && s.par.ep > 1),
      shape_(shape) {
  const int sms = std::max(s.gpu.sms, 1);
  const int held = std::clamp(s.moe.comm_sms, 0, sms - 1);
  slow_ = static_cast<double>(held) / (sms - held);
  if (!on_) return;
  for (int st = 0; st < shape.stages; ++st) {
    const std::vector<PipelinePass> passes = stage_schedule(shape, st);
    const int w = std::max(warmup_passes(shape, st), 1);
    const int total = shape.chunks * shape.micro_batches;
    std::vector<bool> flags(static_cast<std::size_t>(2 * total), false);
    int f = 0;
    int b = 0;
    for (const PipelinePass& p : passes) {
      if (p.kind == PassKind::kForward) {
        flags[slot(shape, p)] = f++ >= w;
      } else {
        flags[slot(shape, p)] = b++ < total - w;
      }
    }
    partnered_.push_back(std::move(flags));
  }
}

bool EpOverlap::partnered(int stage, const PipelinePass& pass) const {
  if (dual_) return pass.partner >= 0;
  return on_ && partnered_[static_cast<std::size_t>(stage)][slot(shape_, pass)];
}

std::pair<double, double> EpOverlap::split(double comm_s, double beside_s) const {
  const double hidden = std::min(comm_s, beside_s);
  return {comm_s - hidden, hidden * slow_};
}

}  // namespace stepsim::workload
