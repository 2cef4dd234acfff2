// Pipelined chains (Broadcast, Reduce) along NCCL's rings: Broadcast runs from the root along the
// ring, Reduce from the root's successor to the root, piece by piece (runtime: LaneRun,
// lane_run.hpp). NCCL's ring Broadcast/Reduce; its tuning.cc prices them as n-1 steps.
// Simplified: the chain has no tree variant.
#include <memory>

#include "src/collective/lane_run.hpp"

namespace stepsim::collective {

namespace {

class Chain final : public LaneAlgorithm {
 public:
  Chain() : LaneAlgorithm(true) {}
  [[nodiscard]] std::string name() const override { return "chain"; }
  [[nodiscard]] std::string selected_by() const override { return "ring"; }
  [[nodiscard]] std::string description() const override {
    return "Broadcast, Reduce: a pipelined chain along the ring, from the root or to it";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kBroadcast, Kind::kReduce};
    s.tuned = true;
    return s;
  }
};

}  // namespace

const AlgorithmRegistration kChainRegistration{[] { return std::make_unique<Chain>(); }, 20};

}  // namespace stepsim::collective
