// DualPipe's mirrored copies' gradient all-reduce (see dualpipe_mirror.hpp; deepseek-ai/DualPipe's
// example adds each copy's gradients to its mirror's).
#include "src/workload/dualpipe_mirror.hpp"

#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {

CommOp mirror_reduce_op(const Scenario& s, const PipelineShape& shape, const Placement& place,
                        int stage) {
  const int mirror = shape.stages - 1 - stage;
  LayerParams bytes;
  for (int c = 0; c < shape.chunks; ++c) {
    const int n = layers_in(shape, s.model.layers, stage, c);
    for (int k = 0; k < n; ++k) {
      const LayerParams b = layer_gradient_bytes(s, shape, stage, c, k);
      bytes.dense += b.dense;
      bytes.expert += b.expert;
    }
    if (n == 0) {
      const LayerParams b = extra_gradient_bytes(s, shape, stage, c);
      bytes.dense += b.dense;
      bytes.expert += b.expert;
    }
  }
  if (s.par.zero >= 1) {
    bytes.dense /= s.par.data_parallel();
    bytes.expert /= s.par.expert_dp();
  }
  return CommOp{collective::Kind::kAllReduce,
                static_cast<std::int64_t>(bytes.dense + bytes.expert),
                {place.rank(0, 0, 0, stage), place.rank(0, 0, 0, mirror)},
                CommGroup::kDp};
}

}  // namespace stepsim::workload
