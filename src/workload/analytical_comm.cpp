// Analytical fidelity: alpha-beta with no contention (collective::analytical_bound), costed in
// bulk by one Kokkos kernel (kernels::alpha_beta) over every distinct collective of the step,
// which run_step lists first (prepare). A lower bound for the ring, tree and point-to-point
// algorithms, not for SHARP or NVLS (docs/fidelity.md).
#include "src/workload/memoized_comm.hpp"
#include "stepsim/kernels/alpha_beta.hpp"

namespace stepsim::workload {
namespace {

// Costs every collective of the step at once (prepare); one run_step did not list is costed
// alone through the same kernel.
class AnalyticalComm final : public MemoizedComm {
 public:
  AnalyticalComm(const topology::Topology& topo, const Scenario& s)
      : MemoizedComm(topo, s), routing_(topo) {}
  [[nodiscard]] std::string name() const override { return "analytical"; }
  [[nodiscard]] bool wants_all_ops() const override { return true; }

  Result<bool> prepare(const std::vector<CommOp>& ops) override {
    std::vector<kernels::AlphaBeta> in;
    std::vector<const CommOp*> todo;
    for (const CommOp& op : ops) {
      if (is_free(op) || memo_.contains(key_of(op))) continue;
      auto comm = collective::make_communicator(topo_, op.gpus);
      if (!comm) return comm.error();
      in.push_back(bound_of(op, *comm));
      todo.push_back(&op);
    }
    std::vector<double> out(in.size());
    kernels::alpha_beta(in, out);
    for (std::size_t i = 0; i < todo.size(); ++i) {
      memo_.emplace(key_of(*todo[i]), with_busbw(*todo[i], out[i]));
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
    return collective::analytical_bound(topo_, routing_, comm, op.kind, op.bytes, s_.coll,
                                        s_.fabric);
  }
  fabric::Routing routing_;
};

}  // namespace

std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s) {
  return std::make_unique<AnalyticalComm>(topo, s);
}

}  // namespace stepsim::workload
