// The comm models' shared parts (see comm_model.hpp and memoized_comm.hpp).
#include "stepsim/workload/comm_model.hpp"

#include "src/workload/memoized_comm.hpp"

namespace stepsim::workload {

const char* comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::kTp:
      return "tp";
    case CommGroup::kCp:
      return "cp";
    case CommGroup::kEp:
      return "ep";
    case CommGroup::kPp:
      return "pp";
    case CommGroup::kDp:
      return "dp";
  }
  return "?";
}

CollectiveKey key_of(const CommOp& op) {
  return std::make_tuple(static_cast<int>(op.kind), op.bytes, op.gpus);
}

bool is_free(const CommOp& op) {
  return op.bytes <= 0 || op.gpus.size() < 2;
}

Result<CommCost> MemoizedComm::cost(const CommOp& op) {
  if (is_free(op)) return CommCost{};
  if (const CommCost* const* hit = recent_.find(op)) return **hit;
  CollectiveKey key = key_of(op);
  if (auto it = memo_.find(key); it != memo_.end()) {
    recent_.put(op, &it->second);
    return it->second;
  }
  auto comm = collective::make_communicator(topo_, op.gpus);
  if (!comm) return comm.error();
  auto c = compute(op, *comm);
  if (!c) return c.error();
  if (!c->stopped) memo_.emplace(std::move(key), *c);
  return c;
}

CommCost MemoizedComm::with_busbw(const CommOp& op, double seconds) {
  CommCost c;
  c.seconds = seconds;
  c.busbw_gbs = static_cast<double>(op.bytes) / seconds / 1e9 *
                collective::busbw_factor(op.kind, static_cast<int>(op.gpus.size()));
  return c;
}

void fill_fabric(CommCost& c, nic::RdmaRun& rdma, std::vector<nic::Connection>&& conns) {
  const fabric::FabricSummary& fs = rdma.summary;
  c.drops = fs.drops();
  c.retransmissions = nic::summarize(rdma.rdma).qp.retransmitted;
  c.paused_ps = fs.paused_ps;
  c.events = rdma.stats.events;
  c.engine = nic::EngineTally::of(rdma);
  std::vector<std::pair<std::uint32_t, fabric::PortStats>> used;
  for (std::uint32_t p = 0; p < rdma.fabric.ports.size(); ++p) {
    const fabric::PortStats& ps = rdma.fabric.ports[p];
    if (ps.used()) used.emplace_back(p, ps);
  }
  c.ports = std::make_shared<const std::vector<std::pair<std::uint32_t, fabric::PortStats>>>(
      std::move(used));
  c.rdma = std::make_shared<const nic::RdmaResults>(std::move(rdma.rdma));
  c.connections = std::make_shared<const std::vector<nic::Connection>>(std::move(conns));
}

Result<CommCost> ListingComm::cost(const CommOp& op) {
  if (is_free(op) || recent_.find(op) != nullptr) return CommCost{};
  if (seen_.insert(key_of(op)).second) ops.push_back(op);
  recent_.put(op, true);
  return CommCost{};
}

}  // namespace stepsim::workload
