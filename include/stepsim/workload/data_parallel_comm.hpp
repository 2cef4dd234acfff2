#pragma once
/// The data-parallel communication of one stage (Megatron-LM's distributed data parallel and
/// distributed optimizer, PyTorch FSDP): gradients fill `parallel.bucket`-byte buckets that are
/// reduced (all-reduce for ZeRO 0, reduce-scatter otherwise; expert gradients over the
/// expert-data-parallel group), ZeRO 1/2's parameter all-gather in buckets after the optimizer,
/// and FSDP's per-layer parameter gather. When they run is the executor's.

#include <cstdint>
#include <optional>
#include <vector>

#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// Which gradients a bucket holds.
enum class GradClass : std::uint8_t { kDense, kExpert };

/// One stage's gradient buckets: bytes pending per class, and the reductions due.
class GradientBuckets {
 public:
  GradientBuckets(const Scenario& s, const Placement& place, int stage);
  /// A layer's gradients (layer_gradient_bytes) join the pending bytes.
  void add(const LayerParams& bytes);
  /// The next reduction of `cls` that is due: a full bucket, or, when `flush`, whatever is
  /// pending. None when nothing is due. The bytes leave the pending count.
  std::optional<CommOp> next(GradClass cls, bool flush);
  [[nodiscard]] double pending(GradClass cls) const;

 private:
  double bucket_;
  collective::Kind kind_;
  double pending_[2] = {0, 0};
  std::vector<std::uint32_t> group_[2];  // the data-parallel and expert-data-parallel groups
};

/// ZeRO 1/2: the all-gathers of `params` updated parameters (bf16) of `stage`, bucket by bucket.
std::vector<CommOp> param_gather_ops(const Scenario& s, const Placement& place, int stage,
                                     double params);

/// FSDP (ZeRO 3): the all-gather of one layer's parameters (bf16) on `stage`.
CommOp fsdp_gather_op(const Scenario& s, const Placement& place, int stage);

}  // namespace stepsim::workload
