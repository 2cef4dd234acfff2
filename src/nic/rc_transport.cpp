// RcTransport: set-up, timers, errors and completions (see rc_transport.hpp).
#include "src/nic/rc_transport.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/rdma_host.hpp"

namespace stepsim::nic {

using fabric::Packet;
using topology::kNone;
using topology::PortId;

namespace {

cc::CcNeeds needs_of(const cc::CcParams& p) {
  auto needs = cc::congestion_control_needs(p);
  STEPSIM_CHECK(needs.ok(), needs.ok() ? std::string() : needs.error().message);
  return *needs;
}

}  // namespace

RcTransport::RcTransport(RdmaHost& host, const NicParams& p, fabric::FabricModel& fabric,
                         std::span<const pdes::LpId> local_lps,
                         const std::vector<Connection>& connections)
    : host_(host),
      p_(p),
      fabric_(fabric),
      mtu_(fabric.params().segment().count()),
      wire_mtu_(fabric.params().mtu.count()),
      qp_gap_(p.cycles(p.ctx_lookup.cycles) + p.cycles(p.wqe_fetch.cycles) + p.pkt_gen.latency),
      needs_(needs_of(p.cc)),
      uet_(p.kind == "uet"),
      pipe_(p, wire_mtu_) {
  const std::int64_t per_cell = pipe_.packets_in(mtu_);  // 1 at packet fidelity
  const auto per_frame = [per_cell](int packets) {
    return static_cast<std::uint32_t>(
        std::max<std::int64_t>(1, (packets + per_cell - 1) / per_cell));
  };
  tx_slots_ = std::max<std::uint32_t>(2, per_frame(p.tx_slots));
  // With large cells the 2-frame minimum puts more bytes in flight per QP than packet level
  // (2 x 512 KiB against 64 x 4 KiB): an ACK then waits that many more bytes behind a
  // congested port, and a timer set for packets fires although nothing was lost (an 8:1
  // incast of 512 KiB cells timed its QPs out into ERROR). The timer stretches by the same
  // factor; at 64 KiB cells and at packet level it is transport.rto.
  const double packet_bytes = static_cast<double>(p.tx_slots) * static_cast<double>(wire_mtu_);
  const double frame_bytes = static_cast<double>(tx_slots_) * static_cast<double>(mtu_);
  rto_ = per_cell > 1 && frame_bytes > packet_bytes
             ? SimTime::ps(std::llround(static_cast<double>(p.rto.picoseconds()) * frame_bytes /
                                        packet_bytes))
             : p.rto;
  ack_coalesce_ = static_cast<int>(per_frame(p.ack_coalesce));
  nak_threshold_ = per_frame(p.nak_threshold);
  // The unordered transport places out of order whatever the load balancing does.
  auto retx = make_retransmission(
      uet_ ? std::string("selective")
           : resolve_retransmission(p.retransmission, fabric.params().lb.policy),
      RetransmissionConfig{static_cast<std::uint32_t>(p.sr_window), nak_threshold_});
  STEPSIM_CHECK(retx.ok(), retx.ok() ? std::string() : retx.error().message);
  retx_ = std::move(retx).value();
  add_servers(local_lps);
  add_endpoints(connections);
}

void RcTransport::add_servers(std::span<const pdes::LpId> local_lps) {
  const topology::Topology& topo = fabric_.topology();
  const fabric::Routing& routing = fabric_.routing();
  server_of_slot_.assign(local_lps.size(), kNone);
  server_of_node_.assign(topo.nodes.size(), kNone);
  for (std::uint32_t slot = 0; slot < local_lps.size(); ++slot) {
    const pdes::LpId v = local_lps[slot];
    if (!topo.is_server(v)) continue;
    const auto s = static_cast<std::uint32_t>(servers_.size());
    server_of_slot_[slot] = s;
    server_of_node_[v] = s;
    ServerState& ss = servers_.emplace_back();
    ss.node = v;
    ss.nics.resize(topo.nodes[v].port_count);
    for (std::uint32_t i = 0; i < ss.nics.size(); ++i) {
      NicPort& n = ss.nics[i];
      n.line = routing.port(topo.nodes[v].first_port + i).rate;
      n.pipe = pipe_.make_state(size_for_port(p_.pcie, n.line));
    }
  }
  qps_of_server_.assign(servers_.size(), {});
}

void RcTransport::add_endpoints(const std::vector<Connection>& connections) {
  const topology::Topology& topo = fabric_.topology();
  local_ep_.assign(connections.size() * 2, kNone);
  std::size_t count = 0;
  for (const Connection& c : connections) {
    for (PortId port : {c.a, c.b}) {
      STEPSIM_CHECK(port < topo.ports.size() && topo.is_server(topo.ports[port].node),
                    "a connection names port " + std::to_string(port) + ", not a server port");
      if (server_of_node_[topo.ports[port].node] != kNone) ++count;
    }
  }
  qps_.reserve(count);  // QueuePair holds a unique_ptr: no reallocation after this
  for (std::uint32_t ci = 0; ci < connections.size(); ++ci) {
    for (int side = 0; side < 2; ++side) add_endpoint(connections[ci], ci, side);
  }
}

void RcTransport::add_endpoint(const Connection& c, std::uint32_t connection, int side) {
  const topology::Topology& topo = fabric_.topology();
  const fabric::Routing& routing = fabric_.routing();
  const PortId mine = side == 0 ? c.a : c.b;
  const PortId peer = side == 0 ? c.b : c.a;
  const std::uint32_t s = server_of_node_[topo.ports[mine].node];
  if (s == kNone) return;
  const std::uint32_t id = endpoint_of(connection, side);
  local_ep_[id] = static_cast<std::uint32_t>(qps_.size());
  qps_of_server_[s].push_back(static_cast<std::uint32_t>(qps_.size()));
  QueuePair& qp = qps_.emplace_back();
  qp.id = id;
  qp.server = s;
  qp.nic = topo.ports[mine].index;
  qp.peer_nic = peer;
  qp.prio = c.prio;
  qp.hash = fabric::tuple_hash(mine, peer, c.entropy, c.label);
  const cc::CcPath path{routing.port(mine).rate,
                        RdmaHost::base_rtt(topo, routing, fabric_.params(), mine, peer)};
  if (uet_) {
    // The sender may have as many PSNs outstanding as the receiver can hold past a hole.
    qp.rq.board.init(static_cast<std::uint32_t>(p_.sr_window));
    qp.rq.reorder_window = p_.reorder_window;
    qp.rq.base_rtt = path.base_rtt;
  }
  auto made = cc::make_congestion_control(p_.cc, path);
  STEPSIM_CHECK(made.ok(), made.ok() ? std::string() : made.error().message);
  qp.cc = std::move(made).value();
  qp.rs.cnp = cc::CnpGenerator(needs_.cnp_interval);
  qp.cq.set_depth(static_cast<std::size_t>(p_.cq_depth));
  retx_->init(qp.rs);
  // Round trips of the packets in flight: a window of 1.5 BDP at 1.6T and 10 us is ~730 MTUs.
  if (needs_.ack_echo) qp.rq.departures.resize(2048);
  qp.bring_up();
}

// --- helpers -----------------------------------------------------------------------------------

// The port has a packet ready at `ready`: wake the fabric now, or an event then.
void RcTransport::wake_at(pdes::LpContext& ctx, NicPort& n, std::uint32_t nic, SimTime ready) {
  if (ready <= ctx.now()) {
    fabric_.wake(ctx, nic);
  } else {
    schedule_once(ctx, n.wake_at, ready, kEvNicWake, nic);
  }
}

void RcTransport::arm_rto(pdes::LpContext& ctx, QueuePair& qp) {
  if (qp.rq.rto_deadline.is_never()) return;
  schedule_once(ctx, qp.rq.rto_at, qp.rq.rto_deadline, kEvRto, qp.id);
}

void RcTransport::activate(pdes::LpContext& ctx, QueuePair& qp) {
  if (qp.state == QpState::kError) return;
  catch_up_cc(ctx, qp);
  arm_cc_timer(ctx, qp);
  if (!qp.active) {
    qp.active = true;
    port_of(qp).arb.activate(static_cast<std::uint32_t>(&qp - qps_.data()));
  }
  fill(ctx, qp.server, qp.nic);
}

void RcTransport::queue_ctrl(pdes::LpContext& ctx, QueuePair& qp, std::uint8_t op,
                             std::uint32_t flow, std::uint32_t psn, SimTime ready,
                             std::uint16_t telemetry, std::uint32_t arg, std::uint8_t flags) {
  RcHeader h;
  h.qp = flow;
  h.psn = psn;
  h.op = op;
  h.arg = arg;
  h.flags = flags;
  h.int_echo = telemetry;
  Packet c;
  c.dst_nic = qp.peer_nic;
  c.bytes = fabric::kAckFrameBytes;
  c.prio = qp.prio;
  c.tuple_hash = qp.hash;
  c.transport = fabric::TransportHeader::of(h);
  NicPort& n = port_of(qp);
  n.arb.ctrl.push(TxSlot{c, ready});
  wake_at(ctx, n, qp.nic, ready);
}

// --- events ------------------------------------------------------------------------------------

void RcTransport::on_event(pdes::LpContext& ctx, const pdes::Event& ev) {
  switch (ev.kind) {
    case kEvWqeReady:
      activate(ctx, local(ev.aux));
      break;
    case kEvNicWake:
      on_nic_wake(ctx, ev.aux);
      break;
    case kEvPace:
      on_pace(ctx, local(ev.aux));
      break;
    case kEvRto:
      if (ctx.now() == local(ev.aux).rq.rto_at) on_rto(ctx, local(ev.aux));
      break;
    case kEvCcTimer:
      on_cc_timer(ctx, local(ev.aux));
      break;
    case kEvCqe:
      on_cqe(ctx, local(ev.aux), ev.payload_as<CqeMsg>());
      break;
    case kEvPcieFault: {
      // PCIe AER: the link retrains at a lower generation (same width); DMA slows from now on.
      NicPort& n = port_at(ctx, ev.aux);
      n.pipe.pcie = degrade(n.pipe.pcie, ev.payload_as<PcieFaultMsg>().gen);
      ++n.stats.pcie_degrades;
      break;
    }
    default:
      fatal("rdma: unknown event kind " + std::to_string(ev.kind));
  }
}

void RcTransport::on_nic_wake(pdes::LpContext& ctx, std::uint32_t nic) {
  NicPort& n = port_at(ctx, nic);
  if (ctx.now() != n.wake_at) return;  // superseded by an earlier wake
  n.wake_at = SimTime::never();
  fabric_.wake(ctx, nic);
}

void RcTransport::on_pace(pdes::LpContext& ctx, QueuePair& qp) {
  if (ctx.now() != qp.pace_at) return;
  qp.pace_at = SimTime::never();
  if (qp.has_more()) activate(ctx, qp);
}

void RcTransport::on_cc_timer(pdes::LpContext& ctx, QueuePair& qp) {
  if (ctx.now() != qp.cc_at) return;
  qp.cc_at = SimTime::never();
  catch_up_cc(ctx, qp);
  arm_cc_timer(ctx, qp);
  if (qp.has_more()) activate(ctx, qp);
}

void RcTransport::on_rto(pdes::LpContext& ctx, QueuePair& qp) {
  Requester& rq = qp.rq;
  rq.rto_at = SimTime::never();
  if (qp.state == QpState::kError || rq.rto_deadline.is_never()) return;
  if (ctx.now() < rq.rto_deadline) {
    arm_rto(ctx, qp);
    return;
  }
  ++qp.stats.timeouts;
  if (++rq.retries > p_.retry_count) {
    to_error(ctx, qp, QpError::kRetryExceeded);
    return;
  }
  if (!rq.sq.empty() && rq.sq.front().wr.opcode == Opcode::kRead) {
    RetransmissionStrategy::go_back_to_una(qp);  // READs recover by going back
  } else {
    if (uet_) rq.board.mark_lost(rq.una, false);  // the loss detection leaves it to the resend
    retx_->on_timeout(qp);
  }
  // The next timeout counts from the retransmission's departure (build_request arms it), not
  // from now: a QP its rate limiter holds (DCQCN's floor is 1 Mb/s: 33 ms per 4 KiB packet) must
  // not time out again, and exhaust its retries, while its resend waits to leave.
  rq.rto_deadline = SimTime::never();
  activate(ctx, qp);
}

// The failed WQE completes in error; the rest are flushed (a CQ overflow completes none).
void RcTransport::to_error(pdes::LpContext& ctx, QueuePair& qp, QpError why) {
  qp.fail(why, [&](const Wqe& w, bool first) {
    if (why != QpError::kRetryExceeded) return;
    Completion c;
    c.wr_id = w.wr.wr_id;
    c.endpoint = qp.id;
    c.opcode = w.wr.opcode;
    c.status = first ? WcStatus::kRetryExceeded : WcStatus::kFlushed;
    c.bytes = w.wr.bytes;
    c.posted = w.posted;
    c.first_byte = w.trace.sent_ps >= 0 ? SimTime::ps(w.trace.sent_ps) : SimTime::never();
    c.packets = w.packets;
    c.retransmitted = w.retransmitted;
    ctx.send(ctx.self(), SimTime::zero(), kEvCqe, qp.id, CqeMsg{qp.cq.stage(c)});
  });
}

void RcTransport::on_cqe(pdes::LpContext& ctx, QueuePair& qp, const CqeMsg& m) {
  Completion c = qp.cq.unstage(m.slot);
  if (qp.cq.full()) {
    ++port_of(qp).stats.cq_overflows;
    if (qp.state != QpState::kError) to_error(ctx, qp, QpError::kCqOverflow);
    return;
  }
  c.done = ctx.now();
  qp.cq.push(c);
  host_.notify_app(ctx, qp.id);
}

// --- verbs -------------------------------------------------------------------------------------

std::size_t RcTransport::poll_cq(std::uint32_t endpoint, std::span<Completion> out) {
  STEPSIM_CHECK(endpoint < local_ep_.size() && local_ep_[endpoint] != kNone,
                "poll_cq on an endpoint not on this rank");
  return local(endpoint).cq.poll(out);
}

QpState RcTransport::state(std::uint32_t endpoint) const {
  return qps_[local_ep_[endpoint]].state;
}

}  // namespace stepsim::nic
