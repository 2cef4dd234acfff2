// Observation of the fabric: a port's counters (hot and cold state merged), the per-LP digest the
// golden tests compare, the gathering of every rank's counters, and the model's memory.
#include <algorithm>

#include "src/fabric/egress_port.hpp"
#include "stepsim/core/hash.hpp"

namespace stepsim::fabric {

using topology::kNone;

namespace {

void pack(const PortStats& st, std::uint64_t* x) {
  const std::uint64_t v[PortStats::kFields] = {st.bytes,
                                               st.packets,
                                               st.ecn_marks,
                                               st.pause_sent,
                                               st.pause_received,
                                               st.drops_buffer,
                                               st.drops_fec,
                                               st.drops_link_down,
                                               st.drops_unroutable,
                                               st.fec_corrected,
                                               st.fec_uncorrectable,
                                               static_cast<std::uint64_t>(st.paused_ps),
                                               static_cast<std::uint64_t>(st.max_queue),
                                               static_cast<std::uint64_t>(st.first_mark_ps + 1),
                                               static_cast<std::uint64_t>(st.first_pause_ps + 1),
                                               st.queue_byte_ns,
                                               static_cast<std::uint64_t>(st.busy_ps),
                                               static_cast<std::uint64_t>(st.last_pause_ps + 1)};
  std::copy(v, v + PortStats::kFields, x);
}

PortStats unpack(const std::uint64_t* x) {
  PortStats st;
  st.bytes = x[0];
  st.packets = x[1];
  st.ecn_marks = x[2];
  st.pause_sent = x[3];
  st.pause_received = x[4];
  st.drops_buffer = x[5];
  st.drops_fec = x[6];
  st.drops_link_down = x[7];
  st.drops_unroutable = x[8];
  st.fec_corrected = x[9];
  st.fec_uncorrectable = x[10];
  st.paused_ps = static_cast<std::int64_t>(x[11]);
  st.max_queue = static_cast<std::int64_t>(x[12]);
  st.first_mark_ps = static_cast<std::int64_t>(x[13]) - 1;
  st.first_pause_ps = static_cast<std::int64_t>(x[14]) - 1;
  st.queue_byte_ns = x[15];
  st.busy_ps = static_cast<std::int64_t>(x[16]);
  st.last_pause_ps = static_cast<std::int64_t>(x[17]) - 1;
  return st;
}

}  // namespace

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
    const PortStats s = stats_of(n.port_base + i);
    for (std::uint64_t v :
         {s.bytes, s.packets, s.ecn_marks, s.pause_sent, s.pause_received, s.drops_buffer,
          s.drops_fec, s.drops_link_down, s.drops_unroutable, s.fec_corrected, s.fec_uncorrectable,
          static_cast<std::uint64_t>(s.paused_ps), static_cast<std::uint64_t>(s.max_queue)}) {
      h = hash_combine(h, v);
    }
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
  const std::size_t np = topo_.ports.size();
  std::vector<std::uint64_t> buf(np * PortStats::kFields + flows_.size() * FlowRecord::kFields, 0);
  for (std::uint32_t s = 0; s < local_.size(); ++s) {
    const NodeState& n = nodes_[s];
    for (std::uint32_t i = 0; i < n.port_count; ++i) {
      pack(stats_of(n.port_base + i),
           buf.data() + static_cast<std::size_t>(n.first_port + i) * PortStats::kFields);
    }
  }
  std::uint64_t* fx = buf.data() + np * PortStats::kFields;
  for (const Flow& f : flows_) {
    if (slot_of_node_[topo_.ports[f.dst_nic].node] == kNone) continue;
    const FlowRecord& r = recv_[f.id];
    std::uint64_t* x = fx + static_cast<std::size_t>(f.id) * FlowRecord::kFields;
    x[0] = static_cast<std::uint64_t>(r.bytes_received);
    x[1] = static_cast<std::uint64_t>(r.first_ps + 1);  // 0 = never
    x[2] = static_cast<std::uint64_t>(r.end_ps + 1);
    x[3] = r.ecn_marked;
  }
  sync.allreduce_sum(buf);
  FabricResults out;
  out.ports.resize(np);
  for (std::size_t p = 0; p < np; ++p) out.ports[p] = unpack(buf.data() + p * PortStats::kFields);
  out.flows.resize(flows_.size());
  for (std::size_t f = 0; f < flows_.size(); ++f) {
    const std::uint64_t* x = fx + f * FlowRecord::kFields;
    out.flows[f].bytes_received = static_cast<std::int64_t>(x[0]);
    out.flows[f].first_ps = static_cast<std::int64_t>(x[1]) - 1;
    out.flows[f].end_ps = static_cast<std::int64_t>(x[2]) - 1;
    out.flows[f].ecn_marked = x[3];
  }
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
