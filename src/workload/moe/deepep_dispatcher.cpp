// moe.dispatcher deepep: DeepEP's normal kernels (the ep_dispatch and ep_combine collectives,
// src/collective/deepep_algorithm.cpp): each token over RDMA once per server it needs (at most
// moe.max_nodes_per_token), then NVLink to its experts' GPUs. The forward dispatch sends FP8
// activations when the model runs in FP8 (DeepSeek-V3's recipe), BF16 otherwise; the combine
// and both backward passes (the gradients) are BF16.
#include "src/workload/moe/moe_dispatcher.hpp"

namespace stepsim::workload {

namespace {

class Deepep final : public MoeDispatcher {
 public:
  [[nodiscard]] std::string name() const override { return "deepep"; }
  [[nodiscard]] std::string description() const override {
    return "DeepEP's normal kernels: RDMA once per destination server, then NVLink to the "
           "experts";
  }
  [[nodiscard]] std::vector<CommOp> ops(const MoeTokens& t, const Scenario& /*s*/,
                                        const std::vector<std::uint32_t>& gpus,
                                        bool fwd) const override {
    return deepep_ops(t, gpus, fwd, collective::Kind::kEpDispatch, collective::Kind::kEpCombine);
  }
};

}  // namespace

const MoeDispatcher& deepep_dispatcher() {
  static const Deepep d;
  return d;
}

}  // namespace stepsim::workload
