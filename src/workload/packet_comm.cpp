// Packet and cell fidelity: each distinct collective (kind, size, GPUs) runs once on the PDES at
// packet level (or in cells of fabric.cell bytes) on its GPUs, NICs and the whole fabric, with
// its copies on the other TP (and CP) ranks when `concurrent` (collective::run_collectives).
// Collectives of other stages and groups are not simulated alongside (issue 14 lifts that).
#include <algorithm>
#include <span>

#include "src/workload/memoized_comm.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/core/hash.hpp"

namespace stepsim::workload {
namespace {

class PacketComm final : public MemoizedComm {
 public:
  PacketComm(const topology::Topology& topo, const Scenario& s, pdes::Sync& sync,
             pdes::EngineOptions engine)
      : MemoizedComm(topo, s), sync_(sync), engine_(std::move(engine)), fabric_(s.fabric) {
    if (s.fidelity == "cell") fabric_.use_cells();
  }
  [[nodiscard]] std::string name() const override {
    return fabric_.cell.count() > 0 ? "cell" : "packet";
  }

 private:
  Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) override {
    // Algorithms with restrictions apply where they can; the ring elsewhere.
    const collective::CollectiveParams p = collective::applicable_params(
        s_.coll,
        collective::CollectiveShape::of(op.kind, op.bytes, comm.size(), comm.gpus_per_server));
    collective::CollectiveSpec spec;
    spec.kind = op.kind;
    spec.bytes = op.bytes;
    // The same collective on the other TP (and CP) ranks runs at the same time on their NICs.
    const int copies = op.group == CommGroup::kTp   ? 1
                       : op.group == CommGroup::kCp ? s_.par.tp
                                                    : s_.par.tp * s_.par.cp;
    if (s_.concurrent && copies > 1 && collective::runs_concurrently(p, op.kind)) {
      return run_with_copies(op, comm, spec, p, copies);
    }
    auto r = collective::run_collective(topo_, comm, spec, p, s_.nic, fabric_, sync_, engine_);
    if (!r) return r.error();
    collective::CollectiveRun run = std::move(r).value();
    return cost_of(op, {&run.result, 1}, run.rdma, std::move(run.connections));
  }

  // The collective and its `copies` - 1 copies shifted by one GPU each, in one packet run.
  Result<CommCost> run_with_copies(const CommOp& op, const collective::Communicator& comm,
                                   const collective::CollectiveSpec& spec,
                                   const collective::CollectiveParams& p, int copies) {
    std::vector<collective::Communicator> comms{comm};
    for (int k = 1; k < copies; ++k) {
      std::vector<std::uint32_t> gpus = op.gpus;
      for (std::uint32_t& g : gpus) g += static_cast<std::uint32_t>(k);
      auto c = collective::make_communicator(topo_, gpus);
      if (!c) return c.error();
      comms.push_back(std::move(c).value());
    }
    const std::vector<collective::CollectiveSpec> specs(comms.size(), spec);
    auto r = collective::run_collectives(topo_, comms, specs, p, s_.nic, fabric_, sync_, engine_);
    if (!r) return r.error();
    collective::MultiRun run = std::move(r).value();
    return cost_of(op, run.results, run.rdma, std::move(run.connections));
  }

  // The collective's cost from its packet run (with its copies): the slowest copy's time, and
  // what the NICs and the fabric saw.
  static Result<CommCost> cost_of(const CommOp& op,
                                  std::span<const collective::CollectiveResult> results,
                                  nic::RdmaRun& rdma, std::vector<nic::Connection>&& conns) {
    if (!rdma.stats.completed && pdes::Engine::stop_requested()) {
      CommCost stopped;
      stopped.stopped = true;
      return stopped;
    }
    std::int64_t t = 0;
    LogHistogram fct;
    std::vector<collective::ConnectionFlow> flows;  // by endpoint: each result's in turn
    std::uint64_t network_bytes = 0;
    for (const collective::CollectiveResult& x : results) {
      if (!rdma.stats.completed || !x.complete()) {
        return Error{"a " + collective::kind_name(op.kind) + " of " + std::to_string(op.bytes) +
                     " bytes over " + std::to_string(op.gpus.size()) +
                     " GPUs did not complete (stopped or packets lost beyond recovery)"};
      }
      t = std::max(t, x.time_ps);
      fct.merge(x.message_fct);
      flows.insert(flows.end(), x.flows.begin(), x.flows.end());
      network_bytes += x.network_bytes;
    }
    CommCost c = with_busbw(op, static_cast<double>(t) * 1e-12);
    fill_fabric(c, rdma, std::move(conns));
    c.digest = hash_combine(rdma.stats.digest, static_cast<std::uint64_t>(t));
    c.message_fct = std::make_shared<const LogHistogram>(fct);
    c.flows = std::make_shared<const std::vector<collective::ConnectionFlow>>(std::move(flows));
    c.network_bytes = network_bytes;
    return c;
  }

  pdes::Sync& sync_;
  pdes::EngineOptions engine_;
  fabric::FabricParams fabric_;  // the scenario's, with the cell at cell fidelity
};

}  // namespace

std::unique_ptr<CommModel> make_packet_comm(const topology::Topology& topo, const Scenario& s,
                                            pdes::Sync& sync, pdes::EngineOptions engine) {
  return std::make_unique<PacketComm>(topo, s, sync, std::move(engine));
}

}  // namespace stepsim::workload
