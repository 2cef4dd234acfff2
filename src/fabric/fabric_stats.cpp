// Observation of the fabric: a port's counters (hot and cold state merged), the per-LP digest the
// golden tests compare, the gathering of every rank's counters, and the model's memory.
#include "src/fabric/egress_port.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::fabric {

using topology::kNone;

PortStats FabricModel::stats_of(std::uint32_t local_port) const {
  PortStats s = cold_[local_port].stats;
  const PortState& p = ports_[local_port];
  s.packets = p.packets;
  s.bytes = p.bytes;
  s.max_queue = p.max_queue;
  s.busy_ps = p.busy.picoseconds();
  s.queue_byte_ns = static_cast<std::uint64_t>(p.queue_integral * 1e-3);
  return s;
}
std::uint64_t FabricModel::lp_digest(std::uint32_t slot) const {
  const NodeState& n = nodes_[slot];
  std::uint64_t h = 0;
  for (std::uint32_t i = 0; i < n.port_count; ++i) {
    h = stat::digest(h, stats_of(n.port_base + i));
  }
  if (host_ != nullptr && n.is_server) h = hash_combine(h, host_->digest(local_[slot]));
  if (agent_ != nullptr && !n.is_server) h = hash_combine(h, agent_->digest(local_[slot]));
  for (std::uint32_t f : flows_to_node_[local_[slot]]) {
    const FlowRecord& r = recv_[f];
    h = hash_combine(hash_combine(h, static_cast<std::uint64_t>(r.bytes_received)),
                     static_cast<std::uint64_t>(r.end_ps) ^ (r.ecn_marked << 48));
  }
  return h;
}
FabricResults FabricModel::collect(pdes::Sync& sync) const {
  // Every rank fills its own nodes' ports and its receivers' flows; the rest keep their defaults.
  FabricResults out;
  out.ports.resize(topo_.ports.size());
  out.flows.resize(flows_.size());
  for (std::uint32_t s = 0; s < local_.size(); ++s) {
    const NodeState& n = nodes_[s];
    for (std::uint32_t i = 0; i < n.port_count; ++i) {
      out.ports[n.first_port + i] = stats_of(n.port_base + i);
    }
  }
  for (const Flow& f : flows_) {
    if (slot_of_node_[topo_.ports[f.dst_nic].node] != kNone) out.flows[f.id] = recv_[f.id];
  }
  stat::allreduce(sync, out.ports);
  stat::allreduce(sync, out.flows);
  return out;
}

std::size_t FabricModel::lp_memory_bytes(std::uint32_t slot) const {
  const NodeState& n = nodes_[slot];
  std::size_t b = sizeof(NodeState) + n.pool.capacity() * sizeof(QueueEntry) +
                  n.free.capacity() * sizeof(std::uint32_t);
  if (n.lb) b += n.lb->memory_bytes();
  for (std::uint32_t i = 0; i < n.port_count; ++i) {
    b += port_state_bytes() + cold_[n.port_base + i].active.capacity() * sizeof(std::uint32_t);
  }
  return b;
}
std::size_t FabricModel::memory_bytes() const {
  std::size_t b = nodes_.capacity() * sizeof(NodeState) + ports_.capacity() * sizeof(PortState) +
                  send_.capacity() * sizeof(SendState) + recv_.capacity() * sizeof(FlowRecord) +
                  flows_.capacity() * sizeof(Flow) + backlog_.capacity() * sizeof(std::int64_t);
  b += cold_.capacity() * sizeof(PortCold);
  for (const PortCold& p : cold_) b += p.active.capacity() * sizeof(std::uint32_t);
  for (const NodeState& n : nodes_) {
    b += n.pool.capacity() * sizeof(QueueEntry) + n.free.capacity() * sizeof(std::uint32_t);
  }
  return b;
}
}  // namespace stepsim::fabric
