// moe.dispatcher deepep: DeepEP's normal kernels (the ep_dispatch and ep_combine collectives,
// src/collective/deepep_algorithm.cpp): each token over RDMA once per server it needs (at most
// moe.max_nodes_per_token), then NVLink to its experts' GPUs. The forward dispatch sends FP8
// activations when the model runs in FP8 (DeepSeek-V3's recipe), BF16 otherwise; the combine
// and both backward passes (the gradients) are BF16.
#include <cmath>

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
    const auto bytes = [&](bool fp8) {
      return std::llround(t.tokens * static_cast<double>(deepep_token_bytes(t.hidden, fp8)));
    };
    using collective::Kind;
    const CommOp dispatch{Kind::kEpDispatch, bytes(fwd && t.fp8), gpus, CommGroup::kEp};
    const CommOp combine{Kind::kEpCombine, bytes(false), gpus, CommGroup::kEp};
    return {dispatch, combine};
  }
};

}  // namespace

const MoeDispatcher& deepep_dispatcher() {
  static const Deepep d;
  return d;
}

}  // namespace stepsim::workload
