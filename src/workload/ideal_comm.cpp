// Ideal fidelity: each collective takes NCCL's cost model (collective::choose, the tuner's
// prediction) on the GPUs' NIC goodput. No fabric and no contention; NVLS and SHARP, which
// the tuner does not cost, fall back to the tuner's own choice.
#include "src/workload/memoized_comm.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/collective/nic_share.hpp"

namespace stepsim::workload {
namespace {

// NIC RDMA goodput of the first server's first cabled NIC.
DataRate nic_goodput(const topology::Topology& topo, const fabric::FabricParams& fp) {
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v)) continue;
    for (const topology::Port& p : topo.ports_of(v)) {
      if (p.link != topology::kNone) return fabric::rdma_goodput(topo.link_rate(p.link), fp.mtu);
    }
  }
  return DataRate::gbps(400);
}

class IdealComm final : public MemoizedComm {
 public:
  IdealComm(const topology::Topology& topo, const Scenario& s)
      : MemoizedComm(topo, s), nic_(nic_goodput(topo, s.fabric)) {}
  [[nodiscard]] std::string name() const override { return "ideal"; }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    collective::CollectiveParams p = s_.coll;
    // Algorithms that need NVLS or SHARP hardware: the tuner's choice instead.
    const collective::CollectiveAlgorithm* a = collective::find_algorithm(p.algorithm, op.kind);
    if (a != nullptr && a->support().needs_hardware()) p.algorithm = "auto";
    // Each GPU's share of its NIC (GPUs that share a NIC share its goodput).
    const DataRate nic = DataRate::bps(static_cast<std::int64_t>(
        static_cast<double>(nic_.bits_per_second()) * collective::nic_share(comm)));
    const collective::Choice ch = collective::choose(
        op.kind, op.bytes, static_cast<int>(op.gpus.size()), comm.gpus_per_server, p, nic);
    return with_busbw(op, ch.predicted_s);
  }
  DataRate nic_;
};

}  // namespace

std::unique_ptr<CommModel> make_ideal_comm(const topology::Topology& topo, const Scenario& s) {
  return std::make_unique<IdealComm>(topo, s);
}

}  // namespace stepsim::workload
