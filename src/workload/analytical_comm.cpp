// Analytical fidelity: alpha-beta with no contention (collective::analytical_bound), costed in
// bulk by one Kokkos kernel (kernels::alpha_beta) over every distinct collective of the step,
// which run_step lists first (prepare). A lower bound for the ring, tree and point-to-point
// algorithms, not for SHARP or NVLS (docs/fidelity.md).
#include "src/workload/memoized_comm.hpp"
#include "stepsim/kernels/alpha_beta.hpp"

namespace stepsim::workload {

struct AnalyticalCache {
  explicit AnalyticalCache(const topology::Topology& topo) : routing(topo) {}
  fabric::Routing routing;
  std::map<CollectiveKey, CommCost> memo;
};

namespace {

// Costs every collective of the step at once (prepare); one run_step did not list is costed
// alone through the same kernel. With a cache shared by many steps (`stepsim plan`), most
// collectives are costed already: no listing pass then (it would run the step's schedule a
// second time), each new one costed alone as it comes (the kernel's result for a transfer does
// not depend on the others costed with it, so the costs are the same).
class AnalyticalComm final : public MemoizedComm {
 public:
  AnalyticalComm(const topology::Topology& topo, const Scenario& s,
                 std::shared_ptr<AnalyticalCache> cache, bool bulk)
      : MemoizedComm(topo, s), cache_(std::move(cache)), bulk_(bulk) {}
  [[nodiscard]] std::string name() const override { return "analytical"; }
  [[nodiscard]] bool wants_all_ops() const override { return bulk_; }

  Result<CommCost> cost(const CommOp& op) override {
    if (bulk_ || is_free(op) || recent_.find(op) != nullptr) return MemoizedComm::cost(op);
    CollectiveKey key = key_of(op);
    if (!memo_.contains(key)) {
      if (auto it = cache_->memo.find(key); it != cache_->memo.end()) {
        memo_.emplace(std::move(key), it->second);
      } else {
        auto c = MemoizedComm::cost(op);
        if (c) cache_->memo.emplace(std::move(key), *c);
        return c;
      }
    }
    return MemoizedComm::cost(op);
  }

  Result<bool> prepare(const std::vector<CommOp>& ops) override {
    std::vector<kernels::AlphaBeta> in;
    std::vector<const CommOp*> todo;
    for (const CommOp& op : ops) {
      if (is_free(op)) continue;
      CollectiveKey key = key_of(op);
      if (memo_.contains(key)) continue;
      if (auto it = cache_->memo.find(key); it != cache_->memo.end()) {
        memo_.emplace(std::move(key), it->second);
        continue;
      }
      auto comm = collective::make_communicator(topo_, op.gpus);
      if (!comm) return comm.error();
      in.push_back(bound_of(op, *comm));
      todo.push_back(&op);
    }
    std::vector<double> out(in.size());
    kernels::alpha_beta(in, out);
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const CommCost c = with_busbw(*todo[i], out[i]);
      cache_->memo.emplace(key_of(*todo[i]), c);
      memo_.emplace(key_of(*todo[i]), c);
    }
    return true;
  }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    const kernels::AlphaBeta in = bound_of(op, comm);
    double out = 0;
    kernels::alpha_beta({&in, 1}, {&out, 1});
    return with_busbw(op, out);
  }
  kernels::AlphaBeta bound_of(const CommOp& op, const collective::Communicator& comm) const {
    return collective::analytical_bound(topo_, cache_->routing, comm, op.kind, op.bytes, s_.coll,
                                        s_.fabric);
  }
  std::shared_ptr<AnalyticalCache> cache_;
  bool bulk_;
};

}  // namespace

std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s) {
  return std::make_unique<AnalyticalComm>(topo, s, make_analytical_cache(topo), true);
}

std::shared_ptr<AnalyticalCache> make_analytical_cache(const topology::Topology& topo) {
  return std::make_shared<AnalyticalCache>(topo);
}

std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s,
                                                std::shared_ptr<AnalyticalCache> cache) {
  return std::make_unique<AnalyticalComm>(topo, s, std::move(cache), false);
}

}  // namespace stepsim::workload
