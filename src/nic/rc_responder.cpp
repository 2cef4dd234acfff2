// RcTransport, the receiving side: a packet that arrives passes the NIC's receive stage and goes
// to the endpoint it is for (requests to the responder, responses and ACKs to the requester);
// the responder places in-order payloads, completes SENDs and WRITEs with immediate, coalesces
// ACKs, NAKs a hole once, hands out-of-order packets to the retransmission strategy and sends
// CNPs when the congestion control needs them.
#include <algorithm>
#include <string>

#include "src/nic/rc_transport.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/nic/rdma_host.hpp"

namespace stepsim::nic {

using fabric::Packet;
using topology::kNone;

void RcTransport::on_packet(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  NicPort& n = port_at(ctx, nic);
  ++n.stats.rx_packets;
  if (pkt.in_network) {
    ++n.stats.in_network_rx;
    host_.notify_in_network(ctx, nic, pkt);
    return;
  }
  // The packet's flow is the requester's endpoint; requests are handled by its peer here,
  // responses and acknowledgements by the requester itself. A CNP names the endpoint to slow.
  const RcHeader h = rc_header(pkt);
  const bool to_requester = h.op == kOpAck || h.op == kOpNak || h.op == kOpReadResp ||
                            h.op == kOpCnp || h.op == kOpTrimNack;
  const std::uint32_t id = to_requester ? h.qp : peer_endpoint(h.qp);
  const std::uint32_t li = id < local_ep_.size() ? local_ep_[id] : kNone;
  STEPSIM_CHECK(li != kNone, "packet for endpoint " + std::to_string(id) + " not on this rank");
  QueuePair& qp = qps_[li];
  const SimTime at = pipe_.receive(n.pipe, n.stats, qp.id,
                                   std::int64_t{pkt.bytes} - fabric::kRoceHeaderBytes, ctx.now());
  if (qp.state == QpState::kError) return;
  on_transport_packet(ctx, qp, pkt, at);
}

// `pkt` for `qp`, out of the receive stage at `at`.
inline void RcTransport::on_transport_packet(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                             SimTime at) {
  const bool ce = pkt.ecn_ce != 0;
  const RcHeader h = rc_header(pkt);
  if (pkt.trimmed) [[unlikely]] {
    on_trimmed(ctx, qp, pkt, at);
    return;
  }
  switch (h.op) {
    case kOpTrimNack:
      on_trim_nack(ctx, qp, h.psn);
      return;
    case kOpCnp:
      ++qp.stats.cnps_received;
      catch_up_cc(ctx, qp);  // timers due before the CNP come first
      qp.cc->on_cnp(ctx.now());
      arm_cc_timer(ctx, qp);
      return;
    case kOpAck:
    case kOpNak:
      on_ack(ctx, qp, pkt, at);
      return;
    case kOpReadResp:
      on_read_response(ctx, qp, pkt, at);
      if (ce) notify_congestion(ctx, qp, h.qp ^ 1u, at);
      return;
    case kOpReadReq:
      if (ce) notify_congestion(ctx, qp, h.qp, at);
      on_read_request(ctx, qp, pkt, at);
      return;
    default:
      if (ce) notify_congestion(ctx, qp, h.qp, at);
      on_request(ctx, qp, pkt, at);
      return;
  }
}

// A READ request: new or repeated, (re)send the responses from its PSN.
void RcTransport::on_read_request(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                  SimTime at) {
  Responder& rs = qp.rs;
  const RcHeader h = rc_header(pkt);
  const std::uint32_t psn = h.psn;
  const auto np = static_cast<std::uint32_t>(std::max<std::int64_t>(1, (h.arg + mtu_ - 1) / mtu_));
  if (psn > rs.epsn) {
    ++qp.stats.out_of_order;
    send_nak(ctx, qp, h.qp, at);
    return;
  }
  if (psn < rs.epsn) ++qp.stats.duplicates;
  rs.start_read(psn, np, h.arg);
  qp.nak_psn = kNoPsn;
  rs.erase_finished_reads();
  activate(ctx, qp);
}

// A WRITE or SEND packet.
inline void RcTransport::on_request(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                    SimTime at) {
  Responder& rs = qp.rs;
  NicPort& n = port_of(qp);
  const RcHeader h = rc_header(pkt);
  const std::uint32_t psn = h.psn;
  const bool last = (h.flags & kLastPacket) != 0;
  const bool completes = last && (h.op == kOpSend || h.op == kOpWriteImm);
  if (psn < rs.epsn) {
    ++qp.stats.duplicates;
    send_ack(ctx, qp, h.qp, at, pkt.telemetry, pkt);
    return;
  }
  if (psn > rs.epsn) {
    on_out_of_order(ctx, qp, pkt, at, completes);
    return;
  }
  // In order: place it, then whatever was held right behind it (selective repeat).
  const std::int64_t payload = static_cast<std::int64_t>(pkt.bytes) - fabric::kRoceHeaderBytes;
  const SimTime placed = pipe_.place(n.pipe, n.line, at, payload);
  rs.recv_bytes += payload;
  qp.recv_trace.arrived_ps = ctx.now().picoseconds();
  bool ack_now = last || (h.flags & kAckRequest) != 0;
  consume(ctx, qp, pkt, completes, last, placed, h.arg, pkt.ecn_ce != 0);
  bool held_completes = false;
  bool held_ce = false;
  std::uint32_t held_imm = 0;
  while (rs.take_held(held_completes, held_imm, held_ce)) {
    // A held packet's payload counts towards its message like an in-order one's.
    bool held_last = false;
    rs.recv_bytes += rs.take_tail(rs.epsn, mtu_, held_last);
    consume(ctx, qp, pkt, held_completes, held_last || held_completes, placed, held_imm, held_ce);
    ack_now = true;
  }
  if (qp.nak_psn != kNoPsn && qp.nak_psn < rs.epsn) qp.nak_psn = kNoPsn;
  if (!uet_ && rs.held > 0 && rs.held >= nak_threshold_) {
    send_nak(ctx, qp, h.qp, at);  // the next hole is known already
  } else if (ack_now || rs.since_ack >= ack_coalesce_) {
    send_ack(ctx, qp, h.qp, at, pkt.telemetry, pkt);
  }
}

void RcTransport::on_out_of_order(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                  SimTime at, bool completes) {
  ++qp.stats.out_of_order;
  const RcHeader h = rc_header(pkt);
  OutOfOrderAction a;
  if (uet_) {
    // Placed if the window holds it, never NAKed: the sender finds the holes from the SACKs.
    if (h.psn - qp.rs.epsn >= qp.rs.window()) return;  // past the window: dropped
    a.place = qp.rs.hold(h.psn, completes, h.arg);
    if (!a.place) ++qp.stats.duplicates;  // held already
  } else {
    a = retx_->on_out_of_order(qp.rs, h.psn, completes, h.arg);
  }
  if (a.place) {
    if (pkt.ecn_ce != 0) qp.rs.mark_held_ce(h.psn);
    NicPort& n = port_of(qp);
    const std::int64_t payload = static_cast<std::int64_t>(pkt.bytes) - fabric::kRoceHeaderBytes;
    const bool last = (h.flags & kLastPacket) != 0;
    if (payload != mtu_ || last) qp.rs.note_tail(h.psn, payload, last);
    pipe_.place(n.pipe, n.line, at, payload);
    // A window algorithm that reads every packet's echo hears of this one now (a selective
    // acknowledgement's feedback; the cumulative PSN stays at the hole).
    if (needs_.ack_echo && (h.flags & kAckRequest) != 0 && !uet_) {
      send_ack(ctx, qp, h.qp, at, pkt.telemetry, pkt);
    }
  }
  if (uet_) send_ack(ctx, qp, h.qp, at, pkt.telemetry, pkt);  // its SACK, or a duplicate's ACK
  if (a.nak) send_nak(ctx, qp, h.qp, at);
}

// A packet a switch cut to its headers: a data packet of a WRITE or SEND is NACKed at once (the
// sender resends it); a READ's request or response is lost as a drop would be (READs recover by
// going back).
void RcTransport::on_trimmed(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt, SimTime at) {
  ++qp.stats.trimmed;
  const RcHeader h = rc_header(pkt);
  if (h.op == kOpWrite || h.op == kOpWriteImm || h.op == kOpSend) {
    queue_ctrl(ctx, qp, kOpTrimNack, h.qp, h.psn, at, 0);
  }
}

// The packet at epsn is in memory at `placed`: epsn moves on; the end of a SEND or a WRITE with
// immediate becomes a receive completion a PCIe write later. `last`: it ends its flow (the
// message's bytes start again); `ce`: it arrived CE-marked.
inline void RcTransport::consume(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                 bool completes, bool last, SimTime placed, std::uint32_t imm,
                                 bool ce) {
  Responder& rs = qp.rs;
  const RcHeader h = rc_header(pkt);
  ++rs.epsn;
  ++rs.since_ack;
  if (ce) ++rs.recv_ecn;
  if (completes) {
    NicPort& n = port_of(qp);
    ++qp.stats.recv_messages;
    const SimTime cqe =
        placed + n.pipe.pcie.write_latency + pipe_.bounce_copy(n.pipe, rs.recv_bytes);
    qp.recv_trace.placed_ps = placed.picoseconds();
    qp.recv_trace.cqe_ps = cqe.picoseconds();
    Completion c;
    c.wr_id = rs.recv_seq++;
    c.endpoint = qp.id;
    c.opcode = opcode_of(h.op);
    c.recv = true;
    c.bytes = rs.recv_bytes;
    c.posted = SimTime::ps(-1);  // the receiver does not know
    c.imm = imm;
    c.ecn_marked = rs.recv_ecn;
    rs.recv_bytes = 0;
    rs.recv_ecn = 0;
    ctx.send(ctx.self(), cqe - ctx.now(), kEvCqe, qp.id, CqeMsg{qp.cq.stage(c)});
  } else if (last) {
    qp.recv_trace.placed_ps = placed.picoseconds();
    rs.recv_bytes = 0;
    rs.recv_ecn = 0;
  }
}

void RcTransport::send_ack(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t flow, SimTime at,
                           std::uint16_t telemetry, const Packet& pkt) {
  qp.rs.since_ack = 0;
  ++qp.stats.acks_sent;
  if (uet_) {
    // The cumulative PSN, the PSN asked for and the SACK bitmap below it (sack_board.hpp).
    const std::uint32_t echo = rc_header(pkt).psn;
    const std::uint8_t flags = pkt.ecn_ce != 0 ? kEcnEcho : 0;
    queue_ctrl(ctx, qp, kOpAck, flow, qp.rs.epsn, at, telemetry,
               pack_sack(qp.rs.epsn, echo, qp.rs.sack_bits(echo)), flags);
    return;
  }
  if (needs_.ack_echo) {
    const std::uint8_t flags = pkt.ecn_ce != 0 ? kEcnEcho : 0;
    queue_ctrl(ctx, qp, kOpAck, flow, qp.rs.epsn, at, telemetry, rc_header(pkt).psn, flags);
    return;
  }
  queue_ctrl(ctx, qp, kOpAck, flow, qp.rs.epsn, at, telemetry);
}

void RcTransport::send_nak(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t flow, SimTime at) {
  if (qp.nak_psn == qp.rs.epsn) return;  // one NAK per hole
  qp.nak_psn = qp.rs.epsn;
  qp.rs.since_ack = 0;
  ++qp.stats.naks_sent;
  queue_ctrl(ctx, qp, kOpNak, flow, qp.rs.epsn, at, 0);
}

// The notification point of a CNP-driven algorithm (DCQCN): at most one CNP per QP and
// interval, to the data's sender.
void RcTransport::notify_congestion(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t sender,
                                    SimTime at) {
  ++qp.stats.ecn_received;
  if (!needs_.cnp) return;
  if (!qp.rs.cnp.on_packet(ctx.now(), true)) return;
  ++qp.stats.cnps_sent;
  queue_ctrl(ctx, qp, kOpCnp, sender, kNoPsn, at, 0);
}

}  // namespace stepsim::nic
