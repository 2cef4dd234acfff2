// Pipelined chains (Broadcast, Reduce) along NCCL's rings: Broadcast runs from the root along the
// ring, Reduce from the root's successor to the root, piece by piece (runtime: LaneRun,
// lane_run.hpp). NCCL's ring Broadcast/Reduce; its tuning.cc prices them as n-1 steps.
// Simplified: the chain has no tree variant.
#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/lane_run.hpp"

namespace stepsim::collective {

namespace {

class Chain final : public CollectiveAlgorithm {
 public:
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
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    return ring_tuner_cost(s, r);
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    return ring_bound_chain(s);
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<LaneRun>(core, true);
  }
};

}  // namespace

const CollectiveAlgorithm& chain_algorithm() {
  static const Chain a;
  return a;
}

}  // namespace stepsim::collective
