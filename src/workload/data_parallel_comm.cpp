// Data-parallel buckets and gathers (see data_parallel_comm.hpp). nccl-tests' S for a
// reduce-scatter or all-gather is the whole array: the bucket.
#include "stepsim/workload/data_parallel_comm.hpp"

#include <algorithm>

namespace stepsim::workload {

using collective::Kind;

namespace {
std::size_t idx(GradClass c) {
  return static_cast<std::size_t>(c);
}
}  // namespace

GradientBuckets::GradientBuckets(const Scenario& s, const Placement& place, int stage)
    : bucket_(static_cast<double>(s.par.bucket)),
      kind_(s.par.zero == 0 ? Kind::kAllReduce : Kind::kReduceScatter) {
  const int dp = s.par.data_parallel();
  group_[idx(GradClass::kDense)] = place.dp_group(stage, 1, dp);
  group_[idx(GradClass::kExpert)] =
      place.expert_dp_group(stage, s.par.expert_tp(), s.par.ep, s.par.expert_dp());
}

void GradientBuckets::add(const LayerParams& bytes) {
  pending_[idx(GradClass::kDense)] += bytes.dense;
  pending_[idx(GradClass::kExpert)] += bytes.expert;
}

std::optional<CommOp> GradientBuckets::next(GradClass cls, bool flush) {
  double& pending = pending_[idx(cls)];
  if (!(pending >= bucket_ || (flush && pending > 0))) return std::nullopt;
  const double b = std::min(pending, bucket_);
  pending -= b;
  return CommOp{kind_, static_cast<std::int64_t>(b), group_[idx(cls)], CommGroup::kDp};
}

double GradientBuckets::pending(GradClass cls) const {
  return pending_[idx(cls)];
}

std::vector<CommOp> param_gather_ops(const Scenario& s, const Placement& place, int stage,
                                     double params) {
  std::vector<CommOp> ops;
  double left = params * 2;
  const auto bucket = static_cast<double>(s.par.bucket);
  const std::vector<std::uint32_t> group = place.dp_group(stage, 1, s.par.data_parallel());
  while (left > 0) {
    const double b = std::min(left, bucket);
    left -= b;
    ops.push_back({Kind::kAllGather, static_cast<std::int64_t>(b), group, CommGroup::kDp});
  }
  return ops;
}

CommOp fsdp_gather_op(const Scenario& s, const Placement& place, int stage) {
  const LayerParams lp = layer_params(s);
  return {Kind::kAllGather, static_cast<std::int64_t>((lp.dense + lp.expert) * 2),
          place.dp_group(stage, 1, s.par.data_parallel()), CommGroup::kDp};
}

}  // namespace stepsim::workload
