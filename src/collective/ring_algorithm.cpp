// NCCL's ring (AllReduce, ReduceScatter, AllGather): coll.channels rings on the rails, each GPU's
// share of a channel cut into n segments, pipelined in pieces of coll.chunk (runtime: LaneRun,
// lane_run.hpp). Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", JPDC 2009; NCCL's tuning.cc for the cost. Simplified: one ring order per
// channel (servers in order), no NVLS or CollNet inside it.
#include <algorithm>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/lane_run.hpp"

namespace stepsim::collective {

double ring_bandwidth(const CollectiveShape& s, const TunerRates& r) {
  return s.servers > 1 ? std::min(s.gpus_per_server * r.nic, r.nvlink) : r.nvlink;
}

double ring_steps(const CollectiveShape& s) {
  return s.kind == Kind::kAllReduce ? 2.0 * (s.gpus - 1) : s.gpus - 1.0;
}

TunerCost ring_tuner_cost(const CollectiveShape& s, const TunerRates& r) {
  const double steps = ring_steps(s);
  const double inter = s.servers > 1 ? steps * s.servers / s.gpus : 0;
  return TunerCost{steps - inter, inter, ring_bandwidth(s, r)};
}

BoundChain ring_bound_chain(const CollectiveShape& s) {
  const TunerCost c = ring_tuner_cost(s, TunerRates{});
  return BoundChain{c.steps_inter, c.steps_intra, true};
}

namespace {

class Ring final : public LaneAlgorithm {
 public:
  Ring() : LaneAlgorithm(false) {}
  [[nodiscard]] std::string name() const override { return "ring"; }
  [[nodiscard]] std::string description() const override {
    return "AllReduce, ReduceScatter, AllGather: NCCL's rings on the rails (PXN between "
           "servers), pipelined in pieces";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather};
    s.tuned = true;
    return s;
  }
};

}  // namespace

const AlgorithmRegistration kRingRegistration{[] { return std::make_unique<Ring>(); }, 10};

}  // namespace stepsim::collective
