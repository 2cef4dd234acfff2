// The raw host: without a host model (the RDMA NIC, nic/), a server's NIC port sends the raw flows
// of bench fabric straight from the port, round robin among its active flows, at line rate or
// paced at the flow's rate, window-limited when the flow has a window (the receiver then sends a
// 64 B acknowledgement per packet, ahead of data). The receiver counts bytes, ECN marks and the
// time of the last byte. Simplification: no loss recovery (a lost packet leaves the flow
// incomplete).
#include "src/fabric/egress_port.hpp"

namespace stepsim::fabric {

using topology::kNone;

namespace {
// The raw host's view of Packet::transport: which flow, which packet of it, and whether it is
// an acknowledgement of that packet (window-based flows).
struct RawHeader {
  std::uint32_t flow = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
};
}  // namespace

void FabricModel::start_flow(pdes::LpContext& ctx, NodeState& n, std::uint32_t flow) {
  const std::uint32_t idx = topo_.ports[flows_[flow].src_nic].index;
  cold(n, idx).active.push_back(flow);
  kick(ctx, n, idx);
}

bool FabricModel::next_host_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t index,
                                   Packet& out) {
  PortState& e = port(n, index);
  PortCold& pc = cold(n, index);
  const auto count = static_cast<std::uint32_t>(pc.active.size());
  SimTime earliest = SimTime::never();
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::uint32_t i = (pc.active_rr + k) % count;
    const std::uint32_t fid = pc.active[i];
    const Flow& f = flows_[fid];
    SendState& s = send_[fid];
    if (lossless(f.prio) && e.paused[0]) continue;
    if (s.next_allowed > ctx.now()) {
      earliest = std::min(earliest, s.next_allowed);
      continue;
    }
    const std::int64_t payload =
        std::min<std::int64_t>(params_.segment().count(), f.bytes - s.sent);
    // An ACK will kick; with nothing in flight one frame goes even if it exceeds the window (a
    // cell larger than the window).
    if (f.window > 0 && s.sent > s.acked && s.sent - s.acked + payload > f.window) continue;
    out = Packet{};
    out.transport = TransportHeader::of(RawHeader{fid, s.next_seq++, 0});
    out.dst_nic = f.dst_nic;
    out.bytes = static_cast<std::uint32_t>(payload) + kRoceHeaderBytes;
    out.prio = f.prio;
    out.tuple_hash = flow_hash_[fid];
    s.sent += payload;
    if (f.rate.bits_per_second() > 0) {
      s.next_allowed =
          ctx.now() + f.rate.serialization_time(Bytes(wire_bytes(out.bytes, params_.mtu.count())));
    }
    if (s.sent >= f.bytes) {
      pc.active[i] = pc.active.back();
      pc.active.pop_back();
      pc.active_rr = pc.active.empty() ? 0 : i % static_cast<std::uint32_t>(pc.active.size());
    } else {
      pc.active_rr = (i + 1) % count;
    }
    return true;
  }
  if (!earliest.is_never() && !e.free_pending) {
    e.free_pending = true;
    ctx.send(ctx.self(), earliest - ctx.now(), kEvPortFree, index);
  }
  return false;
}
std::int64_t FabricModel::payload_of(const Flow& f, std::uint32_t seq) const {
  const std::int64_t segment = params_.segment().count();
  return std::min<std::int64_t>(segment, f.bytes - static_cast<std::int64_t>(seq) * segment);
}
void FabricModel::on_host_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port,
                                 const Packet& pkt) {
  const auto h = pkt.transport.as<RawHeader>();
  const Flow& f = flows_[h.flow];
  if (h.ack != 0) {
    // Back at the sender: the window opens by the acknowledged packet's payload.
    send_[h.flow].acked += payload_of(f, h.seq);
    kick(ctx, n, topo_.ports[f.src_nic].index);
    return;
  }
  if (f.window > 0) {
    Packet ack;
    ack.transport = TransportHeader::of(RawHeader{h.flow, h.seq, 1});
    ack.dst_nic = f.src_nic;
    ack.bytes = kAckFrameBytes;
    ack.prio = f.prio;
    ack.tuple_hash = ack_hash_[h.flow];
    const auto c = static_cast<std::uint32_t>(klass(ack));
    push(n, port(n, in_port).queue[c], QueueEntry{ack, ctx.now(), in_port, c, kNone});
    kick(ctx, n, in_port);
  }
  FlowRecord& r = recv_[h.flow];
  if (r.first_ps < 0) r.first_ps = ctx.now().picoseconds();
  r.bytes_received += static_cast<std::int64_t>(pkt.bytes) - kRoceHeaderBytes;
  if (pkt.ecn_ce) ++r.ecn_marked;
  if (r.bytes_received >= f.bytes && r.end_ps < 0) r.end_ps = ctx.now().picoseconds();
}
}  // namespace stepsim::fabric
