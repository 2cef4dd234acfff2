// The egress port: a packet the forwarding chose joins its queue if buffer admission lets it
// (buffer_admission.hpp), marked on the way by the ECN marker (ecn_marker.hpp) and stamped with
// telemetry (telemetry.hpp); the port serializes one frame at a time, lossless class first unless
// paused (pfc.cpp), and puts it on the pipe: the link's latency (plus the next switch's pipeline)
// after the header (cut-through) or the tail, unless the wire loses it (wire_errors.hpp).
#include "src/fabric/egress_port.hpp"

#include <algorithm>

#include "src/fabric/pfc.hpp"
#include "stepsim/fabric/buffer_admission.hpp"
#include "stepsim/fabric/ecn_marker.hpp"

namespace stepsim::fabric {

using topology::kNone;

namespace {
constexpr std::uint32_t kHeaderBytes = 64;  // what cut-through waits for
// Packet::bytes has 23 bits: a cell and its headers fit.
static_assert(kMaxCellBytes + 4096 < (std::int64_t{1} << 23));
}  // namespace

void FabricModel::enqueue(pdes::LpContext& ctx, NodeState& n, std::uint32_t out,
                          std::uint32_t in_port, Packet pkt, SimTime tail, Classes k) {
  PortState& e = port(n, out);
  PortState& in = port(n, in_port);
  const int c = k.egress;
  const int ic = k.ingress;
  const std::int64_t b = pkt.bytes;
  if (e.down) {
    ++cold(n, out).stats.drops_link_down;
    if (samples_ != nullptr) [[unlikely]]
      samples_->on_drop(n.port_base + out, ctx.now());
    return;
  }
  const BufferAdmission admission(params_.sw.buffer.count(), params_.sw.dt_alpha,
                                  params_.pfc.xoff.count());
  const Admission a = c != kLossyClass
                          ? admission.lossless(b, in.ingress[ic], in.headroom, n.buffer_used)
                          : admission.lossy(b, e.queued[kLossyClass], n.buffer_used);
  if (a != Admission::kAdmit) {
    if (params_.trimming && c == kLossyClass && pkt.bytes > kTrimmedFrameBytes && !pkt.trimmed &&
        !pkt.in_network) [[unlikely]] {
      if (trim(ctx, n, out, in_port, pkt, tail)) return;
    }
    // Too little headroom is the ingress port's fault; no room at the egress is the egress's.
    const std::uint32_t at = a == Admission::kNoHeadroom ? in_port : out;
    ++cold(n, at).stats.drops_buffer;
    if (samples_ != nullptr) [[unlikely]]
      samples_->on_drop(n.port_base + at, ctx.now());
    return;
  }
  const bool marked = EcnMarker(params_.ecn, params_.mtu).mark(e.queued[c], b, n.ecn_rng);
  if (marked) {
    pkt.ecn_ce = 1;
    PortStats& st = cold(n, out).stats;
    if (st.ecn_marks++ == 0) st.first_mark_ps = ctx.now().picoseconds();
  }
  if (params_.telemetry && pkt.int_request) {
    stamp_utilization(pkt, backlog_[n.port_base + out], e.rate, cold(n, out).tx.util,
                      params_.telemetry_rtt);
  }
  queue_packet(ctx, n, out, in_port, pkt, tail, c, ic, marked);
}

// Queues an admitted packet (or trimmed header) in class c of port out, charged to class ic of
// its ingress port, and starts the port if it is idle.
void FabricModel::queue_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t out,
                               std::uint32_t in_port, const Packet& pkt, SimTime tail, int c,
                               int ic, bool marked) {
  PortState& e = port(n, out);
  PortState& in = port(n, in_port);
  const std::int64_t b = pkt.bytes;
  push(n, e.queue[c], QueueEntry{pkt, tail, in_port, static_cast<std::uint32_t>(ic), kNone});
  e.queued[c] += b;
  integrate_queue(e, backlog_[n.port_base + out], ctx.now());
  backlog_[n.port_base + out] += b;
  n.buffer_used += b;
  in.ingress[ic] += b;
  e.max_queue = std::max(e.max_queue, backlog_[n.port_base + out]);
  if (samples_ != nullptr) [[unlikely]]
    samples_->on_enqueue(n.port_base + out, ctx.now(), backlog_[n.port_base + out], marked);
  if (ic != kLossyClass) check_xoff(ctx, n, in_port, ic);
  kick(ctx, n, out);
}

// The trimmed headers join class 0, which the port serves first (with PFC off nothing else uses
// it), and are accounted as lossy bytes of their ingress (no PAUSE for them). Like any header
// they wait only for the packets already on their way out.
bool FabricModel::trim(pdes::LpContext& ctx, NodeState& n, std::uint32_t out, std::uint32_t in_port,
                       Packet pkt, SimTime tail) {
  if (n.buffer_used + kTrimmedFrameBytes > params_.sw.buffer.count()) return false;
  pkt.bytes = kTrimmedFrameBytes;
  pkt.trimmed = 1;
  ++cold(n, out).stats.trimmed;
  queue_packet(ctx, n, out, in_port, pkt, std::min(tail, ctx.now()), 0, kLossyClass, false);
  return true;
}

void FabricModel::release(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, int c,
                          const QueueEntry& q) {
  const std::int64_t b = q.pkt.bytes;
  port(n, index).queued[c] -= b;
  integrate_queue(port(n, index), backlog_[n.port_base + index], ctx.now());
  backlog_[n.port_base + index] -= b;  // the sampler learns it in transmit (or on_fault)
  n.buffer_used -= b;
  port(n, q.in_port).ingress[q.in_class] -= b;
  if (q.in_class != kLossyClass) check_xon(ctx, n, q.in_port, static_cast<int>(q.in_class));
}

void FabricModel::kick(pdes::LpContext& ctx, NodeState& n, std::uint32_t index) {
  PortState& e = port(n, index);
  if (e.down) return;
  if (e.busy_until > ctx.now()) {
    if (!e.free_pending) {
      e.free_pending = true;
      ctx.send(ctx.self(), e.busy_until - ctx.now(), kEvPortFree, index);
    }
    return;
  }
  Packet pkt;
  SimTime tail = ctx.now();
  if (n.is_server && host_ != nullptr) {
    if (!host_->next_packet(ctx, index, e.paused[0], pkt)) return;
  } else if (n.is_server) {
    if (!e.queue[0].empty() && !e.paused[0]) {  // acknowledgements go first
      pkt = pop(n, e.queue[0]).pkt;
    } else if (!e.queue[1].empty()) {
      pkt = pop(n, e.queue[1]).pkt;
    } else if (!next_host_packet(ctx, n, index, pkt)) {
      return;
    }
  } else {
    const int c = next_class(e);
    if (c < 0) return;
    const QueueEntry q = pop(n, e.queue[c]);
    pkt = q.pkt;
    tail = q.tail;
    release(ctx, n, index, c, q);
  }
  transmit(ctx, n, index, pkt, tail);
  const bool more =
      (n.is_server && (host_ != nullptr || !cold(n, index).active.empty())) || has_queued(e);
  if (more && !e.free_pending) {
    e.free_pending = true;
    ctx.send(ctx.self(), e.busy_until - ctx.now(), kEvPortFree, index);
  }
}

int FabricModel::next_class(const PortState& e) const {
  if (lanes_) [[unlikely]] {
    // Virtual lanes: the lane closest to the destination first.
    for (int c = kClasses - 1; c > kLossyClass; --c) {
      if (!e.queue[c].empty() && !e.paused[c]) return c;
    }
  }
  if (!e.queue[0].empty() && !e.paused[0]) return 0;
  if (!e.queue[kLossyClass].empty()) return kLossyClass;
  return -1;
}

bool FabricModel::has_queued(const PortState& e) const {
  if (!e.queue[0].empty() || !e.queue[kLossyClass].empty()) return true;
  if (lanes_) [[unlikely]] {
    for (int c = kLossyClass + 1; c < kClasses; ++c) {
      if (!e.queue[c].empty()) return true;
    }
  }
  return false;
}

void FabricModel::transmit(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, Packet pkt,
                           SimTime tail) {
  PortState& e = port(n, index);
  const PortInfo& pi = routing_.port(n.first_port + index);
  const SimTime now = ctx.now();
  const SimTime ser = frame_time(e, pkt.bytes);
  e.busy_until = std::max(now + ser, tail);
  e.busy += ser;
  ++e.packets;
  e.bytes += pkt.bytes;
  if (samples_ != nullptr) [[unlikely]]
    samples_->on_transmit(n.port_base + index, now, pkt.bytes, ser, backlog_[n.port_base + index]);
  if (params_.telemetry) [[unlikely]] {
    cold(n, index).tx.on_transmit(now, ser, params_.telemetry_rtt);
  }
  if (e.errors) [[unlikely]] {
    PortCold& pc = cold(n, index);
    if (pc.wire.lose_frame(pkt.bytes, params_, pc.stats)) {
      if (samples_ != nullptr) [[unlikely]]
        samples_->on_drop(n.port_base + index, now);
      return;
    }
  }
  // The pipe: the header (cut-through into a switch) or the tail crosses the link, then the next
  // switch's pipeline.
  const bool to_switch = pi.peer_is_switch;
  const SimTime head = params_.sw.cut_through && to_switch ? now + e.hdr_ser : e.busy_until;
  const SimTime arrival = head + pi.latency + (to_switch ? params_.sw.latency : SimTime::zero());
  ctx.send(pi.peer_node, arrival - now, kEvPacket, pi.peer_index, pkt);
}

void FabricModel::push(NodeState& n, Fifo& q, const QueueEntry& e) {
  std::uint32_t i;
  if (n.free.empty()) {
    i = static_cast<std::uint32_t>(n.pool.size());
    n.pool.push_back(e);
  } else {
    i = n.free.back();
    n.free.pop_back();
    n.pool[i] = e;
  }
  if (q.empty()) {
    q.head = i;
  } else {
    n.pool[q.tail].next = i;
  }
  q.tail = i;
}

FabricModel::QueueEntry FabricModel::pop(NodeState& n, Fifo& q) {
  const std::uint32_t i = q.head;
  const QueueEntry e = n.pool[i];
  q.head = e.next;
  if (q.head == kNone) q.tail = kNone;
  n.free.push_back(i);
  return e;
}

void FabricModel::set_rate(PortState& ps, DataRate rate) {
  ps.rate = rate;
  ps.hdr_ser = rate.serialization_time(Bytes(kHeaderBytes));
  ps.frame_bytes = 0;
}

SimTime FabricModel::frame_time(PortState& ps, std::uint32_t frame) const {
  if (ps.frame_bytes != frame) {
    ps.frame_ser = ps.rate.serialization_time(Bytes(wire_bytes(frame, params_.mtu.count())));
    ps.frame_bytes = frame;
  }
  return ps.frame_ser;
}

}  // namespace stepsim::fabric
