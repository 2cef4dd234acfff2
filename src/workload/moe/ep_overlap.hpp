#pragma once
// moe.overlap 1f1b: Megatron-Core's EP communication overlap (overlap_moe_expert_parallel_comm
// with the combined 1F1B schedule): in the steady state a forward pass of one micro-batch and a
// backward pass of another run layer by layer together, each one's dispatch and combine beside
// the other's compute. The warm-up forwards and cool-down backwards (the first forward and the
// last backward without a pipeline) have no partner and block as before.
// moe.overlap dualpipe: DualPipe's schedule names its pairs (PipelinePass::partner): a forward
// of one direction and a backward of the other, on the stage's two chunks.

#include <vector>

#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

class EpOverlap {
 public:
  EpOverlap(const Scenario& s, const PipelineShape& shape);
  /// Whether pass `pass` of `stage` runs beside a partner pass (moe.overlap 1f1b, steady state).
  [[nodiscard]] bool partnered(int stage, const PipelinePass& pass) const;
  /// The chunk of a partnered pass's partner (of the other kind): 1f1b the same, dualpipe the
  /// schedule's pair.
  [[nodiscard]] int partner_chunk(const PipelinePass& pass) const {
    return dual_ ? pass.partner : pass.chunk;
  }
  /// What of an EP collective of `comm_s` the compute stream waits for when `beside_s` of the
  /// partner's compute runs beside it, and the compute's slow-down from the SMs the kernels hold
  /// (moe.comm_sms of gpu SMs) over the overlapped time: {exposed, extra compute}.
  [[nodiscard]] std::pair<double, double> split(double comm_s, double beside_s) const;

 private:
  bool on_ = false;
  bool dual_ = false;  // moe.overlap dualpipe
  double slow_ = 0;    // comm_sms / (sms - comm_sms)
  PipelineShape shape_;
  // By stage: partnered flags by (kind, chunk, micro).
  std::vector<std::vector<bool>> partnered_;
};

}  // namespace stepsim::workload
