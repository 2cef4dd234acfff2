// moe.dispatcher alltoall: Megatron-LM's all-to-all token dispatcher on NCCL. Dispatch and
// combine are each an AllToAll of the GPU's routed tokens (top_k copies of each, BF16), even over
// the EP group (pairwise_algorithm.cpp: a token for several experts of one GPU or server crosses
// the network once per expert).
#include <cmath>

#include "src/workload/moe/moe_dispatcher.hpp"

namespace stepsim::workload {

namespace {

class AllToAll final : public MoeDispatcher {
 public:
  [[nodiscard]] std::string name() const override { return "alltoall"; }
  [[nodiscard]] std::string description() const override {
    return "NCCL all-to-all of each token's top_k copies (Megatron-LM's alltoall dispatcher)";
  }
  [[nodiscard]] std::vector<CommOp> ops(const MoeTokens& t, const Scenario& s,
                                        const std::vector<std::uint32_t>& gpus,
                                        bool /*fwd*/) const override {
    const auto bytes =
        static_cast<std::int64_t>(t.tokens * static_cast<double>(t.hidden * 2) * s.model.top_k);
    const CommOp op{collective::Kind::kAllToAll, bytes, gpus, CommGroup::kEp};
    return {op, op};
  }
};

}  // namespace

const MoeDispatcher& alltoall_dispatcher() {
  static const AllToAll d;
  return d;
}

}  // namespace stepsim::workload
