// moe.dispatcher deepep_ll: DeepEP's low-latency kernels (the ep_dispatch_ll and ep_combine_ll
// collectives, src/collective/deepep_ll_algorithm.cpp): each token straight to each of its
// experts' GPUs over RDMA (NVLink inside the server), for small token counts (decoding, small
// micro-batches). Sizes as deepep: FP8 forward dispatch when the model runs in FP8, BF16
// otherwise.
#include "src/workload/moe/moe_dispatcher.hpp"

namespace stepsim::workload {

namespace {

class DeepepLl final : public MoeDispatcher {
 public:
  [[nodiscard]] std::string name() const override { return "deepep_ll"; }
  [[nodiscard]] std::string description() const override {
    return "DeepEP's low-latency kernels: each token straight to each expert's GPU over "
           "RDMA";
  }
  [[nodiscard]] std::vector<CommOp> ops(const MoeTokens& t, const Scenario& /*s*/,
                                        const std::vector<std::uint32_t>& gpus,
                                        bool fwd) const override {
    return deepep_ops(t, gpus, fwd, collective::Kind::kEpDispatchLl,
                      collective::Kind::kEpCombineLl);
  }
};

}  // namespace

const MoeDispatcher& deepep_ll_dispatcher() {
  static const DeepepLl d;
  return d;
}

}  // namespace stepsim::workload
