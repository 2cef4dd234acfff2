// RcTransport, the requester's side: posting a work request through the NIC's front stages,
// building each packet the send pipeline takes (READ responses first, then resends and new PSNs,
// within the congestion window and the rate limiter), the port's arbitration, and what ACKs,
// NAKs and READ responses do to the send queue.
#include <algorithm>
#include <string>

#include "src/nic/rc_transport.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::nic {

using fabric::Packet;
using topology::kNone;

// --- posting -----------------------------------------------------------------------------------

bool RcTransport::post(pdes::LpContext& ctx, std::uint32_t endpoint, const WorkRequest& wr) {
  STEPSIM_CHECK(endpoint < local_ep_.size() && local_ep_[endpoint] != kNone,
                "post on endpoint " + std::to_string(endpoint) + " which is not on this rank");
  QueuePair& qp = local(endpoint);
  STEPSIM_CHECK(servers_[qp.server].node == ctx.self(),
                "post on endpoint " + std::to_string(endpoint) + " from another server");
  if (qp.state != QpState::kRts) return false;
  Wqe w;
  w.wr = wr;
  qp.rq.number(w, mtu_);
  w.posted = ctx.now();
  w.ready = post_stages(qp, port_of(qp), w, ctx.now());
  qp.rq.last_ready = w.ready;
  qp.rq.sq.push(w);
  ctx.send(ctx.self(), w.ready - ctx.now(), kEvWqeReady, qp.id);
  return true;
}

// The software post, the doorbell, the context lookup and the WQE fetch; returns when the WQE
// is in the NIC, and records each stage's share in the WQE's trace.
SimTime RcTransport::post_stages(QueuePair& qp, NicPort& n, Wqe& w, SimTime now) {
  const WorkRequest& wr = w.wr;
  MessageTrace& tr = w.trace;
  tr.posted_ps = now.picoseconds();
  SimTime t = now + p_.post_overhead;
  if (wr.opcode != Opcode::kRead) t += pipe_.bounce_copy(n.pipe, wr.bytes);  // GPU -> bounce
  tr.post = (t - now).picoseconds();
  const bool inl = wr.bytes <= p_.inline_threshold && wr.opcode != Opcode::kRead;
  SimTime s = pipe_.doorbell(n.pipe, t, wr.bytes, inl);
  tr.doorbell = (s - t).picoseconds();
  t = s;
  s = pipe_.context_stage(n.pipe, n.stats, qp.id, s);
  tr.ctx_lookup = (s - t).picoseconds();
  t = s;
  if (!inl) s = pipe_.wqe_stage(n.pipe, fetch_wqe(qp, n, s, w.posted));
  if (p_.qp_in_order) s = std::max(s, qp.rq.last_ready + qp_gap_);
  tr.wqe_fetch = (s - t).picoseconds();
  return s;
}

// The PCIe read of a WQE; WQEs posted before a fetch went out ride on it (up to wqe_prefetch).
SimTime RcTransport::fetch_wqe(QueuePair& qp, NicPort& n, SimTime s, SimTime posted) {
  Requester& rq = qp.rq;
  if (rq.fetch_batch > 0 && rq.fetch_issued >= posted && rq.fetch_batch < p_.wqe_prefetch) {
    ++rq.fetch_batch;
    return std::max(s, rq.fetch_done);
  }
  ++n.stats.wqe_fetches;
  rq.fetch_issued = s;
  rq.fetch_batch = 1;
  rq.fetch_done = s + n.pipe.pcie.read_latency;
  return rq.fetch_done;
}

// --- the send pipeline -------------------------------------------------------------------------

// Fills the NIC's send pipeline from its active endpoints, round robin.
void RcTransport::fill(pdes::LpContext& ctx, std::uint32_t server, std::uint32_t nic) {
  NicPort& n = servers_[server].nics[nic];
  n.arb.fill(
      tx_slots_, [&](std::uint32_t qp, TxSlot& slot) { return next_of(ctx, qps_[qp], n, slot); },
      // Nothing now: a WQE, an ACK, a NAK, a timeout or the pacer brings it back.
      [&](std::uint32_t qp) { qps_[qp].active = false; });
  if (n.arb.tx.empty() && n.arb.ctrl.empty()) return;
  const SimTime head = n.arb.head();
  if (head > ctx.now()) {
    schedule_once(ctx, n.wake_at, head, kEvNicWake, nic);
  } else if (!n.pulling) {
    fabric_.wake(ctx, nic);
  }
}

// Builds the endpoint's next packet, if it has one it may send now.
inline bool RcTransport::next_of(pdes::LpContext& ctx, QueuePair& qp, NicPort& n, TxSlot& out) {
  const SimTime now = ctx.now();
  if (qp.state == QpState::kError) return false;
  if (qp.paced) {
    const SimTime allowed =
        qp.last_sent + qp.cc->rate().serialization_time(Bytes(qp.last_wire_bytes));
    if (allowed > now) {
      schedule_once(ctx, qp.pace_at, allowed, kEvPace, qp.id);
      return false;
    }
  }
  Packet pkt = packet_header(qp);
  PacketWork work;
  Wqe* first_of = nullptr;                 // the WQE whose first packet this is (its trace)
  if (ReadJob* job = qp.rs.next_read()) {  // READ responses first, then requests
    build_read_response(qp, *job, pkt, work);
  } else if (!build_request(ctx, qp, pkt, work, first_of)) {
    return false;
  }
  const SendTiming tm = pipe_.send(n.pipe, n.stats, qp.id, work, now);
  if (first_of != nullptr) {
    MessageTrace& tr = first_of->trace;
    tr.pkt_gen =
        (tm.generated - tm.start).picoseconds() + (tm.start - first_of->ready).picoseconds();
    tr.dma = (tm.fetched - tm.generated).picoseconds();
    tr.mac = (tm.ready - tm.fetched).picoseconds();
  }
  after_sent(ctx, qp, n, pkt);
  out = TxSlot{pkt, tm.ready};
  return true;
}

inline Packet RcTransport::packet_header(const QueuePair& qp) const {
  Packet pkt;
  pkt.dst_nic = qp.peer_nic;
  pkt.prio = qp.prio;
  pkt.tuple_hash = qp.hash;
  pkt.int_request = needs_.int_telemetry ? 1 : 0;
  return pkt;
}

inline void RcTransport::build_read_response(QueuePair& qp, ReadJob& job, Packet& pkt,
                                             PacketWork& work) {
  const std::int64_t k = job.next - job.first;
  work.payload = std::clamp<std::int64_t>(job.bytes - k * mtu_, 0, mtu_);
  work.page_key = (static_cast<std::uint64_t>(qp.id) << 32) |
                  static_cast<std::uint64_t>(k * mtu_ / p_.page.count());
  RcHeader h;
  h.qp = peer_endpoint(qp.id);  // the requester's stream
  h.psn = job.next++;
  h.op = kOpReadResp;
  pkt.bytes = static_cast<std::uint32_t>(work.payload + fabric::kRoceHeaderBytes);
  if (job.next == job.end) {
    h.flags |= kLastPacket;
    qp.rs.erase_finished_reads();
  }
  pkt.transport = fabric::TransportHeader::of(h);
}

// A resend (selective repeat) or the next new PSN, if the WQE is in the NIC and the congestion
// window allows it; moves the PSNs on and starts the retransmission timer.
inline bool RcTransport::build_request(pdes::LpContext& ctx, QueuePair& qp, Packet& pkt,
                                       PacketWork& work, Wqe*& first_of) {
  Requester& rq = qp.rq;
  std::uint32_t psn = 0;
  std::uint32_t wi = 0;
  const bool from_list = rq.pop_resend(psn, wi);  // a selective resend: the cursor stays
  if (!from_list) {
    if (!rq.has_new()) return false;
    wi = rq.cursor;
    if (rq.sq[wi].ready > ctx.now()) return false;  // its kEvWqeReady will come
    psn = rq.next_psn;
  }
  const bool resend = from_list || psn < rq.max_sent;
  Wqe& w = rq.sq[wi];
  const std::int64_t frame = w.frame_of(psn, mtu_);
  const std::int64_t win = qp.cc->window();
  // The unordered transport credits the window with what its SACKs reported arrived.
  const std::int64_t in_flight = rq.sent_bytes - rq.acked_bytes - rq.board.sacked_bytes;
  if (!resend && win > 0 && in_flight > 0 && in_flight + frame > win) {
    return false;  // an ACK re-activates the endpoint
  }
  // ... and keeps at most its board's PSNs outstanding (the receiver holds as many).
  if (!resend && uet_ && psn - rq.una >= rq.board.size()) return false;
  fill_request(qp, w, psn, pkt, work);
  if (uet_) pkt.tuple_hash = spray_entropy(qp.hash, rq.sprayed++);
  const std::uint32_t next = w.wr.opcode == Opcode::kRead ? w.end_psn() : psn + 1;
  if (psn >= rq.max_sent) rq.sent_bytes += frame;
  if (!from_list) {
    rq.next_psn = next;
    if (next >= w.end_psn()) ++rq.cursor;
  }
  rq.max_sent = std::max(rq.max_sent, next);
  // The MTU packets the frame stands for (a cell at cell fidelity), for the send completion.
  const auto packets = static_cast<std::uint32_t>(
      fabric::packets_in_frame(frame - fabric::kRoceHeaderBytes, wire_mtu_));
  w.packets += packets;
  if (resend) {
    ++qp.stats.retransmitted;
    w.retransmitted += packets;
  } else if (psn == w.first_psn) {
    first_of = &w;
  }
  if (rq.rto_deadline.is_never()) {
    rq.rto_deadline = ctx.now() + rto_;
    arm_rto(ctx, qp);
  }
  return true;
}

// The header of PSN `psn` of `w`, and what its payload needs from the pipeline.
inline void RcTransport::fill_request(const QueuePair& qp, const Wqe& w, std::uint32_t psn,
                                      Packet& pkt, PacketWork& work) const {
  RcHeader h;
  h.qp = qp.id;
  h.psn = psn;
  h.op = op_of(w.wr.opcode);
  if (needs_.ack_per_packet || uet_) h.flags |= kAckRequest;  // uet: a SACK per packet
  if (psn == w.first_psn) h.flags |= kFirstOfMessage;
  const std::int64_t k = psn - w.first_psn;
  if (w.wr.opcode == Opcode::kRead) {
    // One request for the rest of the READ; the responses use its PSNs.
    h.arg = static_cast<std::uint32_t>(w.wr.bytes - k * mtu_);
    h.flags |= kLastPacket;
    pkt.bytes = fabric::kRoceHeaderBytes + kReadReqHeader;
    pkt.transport = fabric::TransportHeader::of(h);
    work.dma = false;
    return;
  }
  work.payload = w.payload_of(psn, mtu_);
  pkt.bytes = static_cast<std::uint32_t>(work.payload + fabric::kRoceHeaderBytes);
  if (psn + 1 == w.end_psn()) {
    h.flags |= kLastPacket;
    h.arg = w.wr.imm;  // immediate data rides in the last packet
  }
  pkt.transport = fabric::TransportHeader::of(h);
  work.dma = w.wr.bytes > p_.inline_threshold;
  work.page_key = (static_cast<std::uint64_t>(qp.id) << 32) |
                  static_cast<std::uint64_t>(k * mtu_ / p_.page.count());
}

// The congestion control sees the packet; the rate limiter spaces the next one.
inline void RcTransport::after_sent(pdes::LpContext& ctx, QueuePair& qp, const NicPort& n,
                                    const Packet& pkt) {
  ++qp.stats.packets;
  qp.cc->on_sent(ctx.now(), pkt.bytes);
  arm_cc_timer(ctx, qp);
  const DataRate r = qp.cc->rate();
  qp.paced = r < n.line;
  if (qp.paced) {
    qp.last_sent = ctx.now();
    qp.last_wire_bytes = fabric::wire_bytes(pkt.bytes, wire_mtu_);
  }
}

// --- the port ----------------------------------------------------------------------------------

bool RcTransport::next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool paused, Packet& out) {
  const std::uint32_t s = server_of_slot_[ctx.slot()];
  NicPort& n = servers_[s].nics[nic];
  const SimTime now = ctx.now();
  auto allowed = [&](const Packet& x) { return !paused || !fabric_.lossless(x.prio); };
  switch (n.arb.take(now, allowed, out)) {
    case NicArbiter::Source::kControl:
      ++n.stats.tx_packets;
      return true;
    case NicArbiter::Source::kInNetwork:
      ++n.stats.tx_packets;
      ++n.stats.in_network_tx;
      return true;
    case NicArbiter::Source::kData:
      ++n.stats.tx_packets;
      if (const RcHeader h = rc_header(out);
          (h.flags & kFirstOfMessage) != 0 || needs_.ack_echo || uet_) {
        if ((h.flags & kFirstOfMessage) != 0) stamp_sent(local(h.qp), h.psn, now);
        // A WRITE's or SEND's departure, for the round trip its ACK will measure, and (uet)
        // for the loss detection.
        if (needs_.ack_echo && h.op <= kOpSend)
          local(h.qp).rq.note_departure(h.psn, out.bytes, now);
        if (uet_ && h.op <= kOpSend) local(h.qp).rq.board.on_departure(h.psn, out.bytes, now);
      }
      n.pulling = true;  // the port is sending this packet: no wake from inside
      fill(ctx, s, nic);
      n.pulling = false;
      return true;
    case NicArbiter::Source::kNone:
      break;
  }
  const SimTime head = n.arb.next_ready(now);
  if (!head.is_never()) schedule_once(ctx, n.wake_at, head, kEvNicWake, nic);
  return false;
}

// A message's first packet starts on the wire: its trace is complete on the sender's side.
inline void RcTransport::stamp_sent(QueuePair& qp, std::uint32_t psn, SimTime now) {
  const std::uint32_t wi = qp.rq.seek(psn);
  if (wi < qp.rq.sq.size() && qp.rq.sq[wi].trace.sent_ps < 0) {
    qp.rq.sq[wi].trace.sent_ps = now.picoseconds();
    qp.sent_trace = qp.rq.sq[wi].trace;
  }
}

// An in-network packet: its payload is read over PCIe (the DMA read latency, then the bytes at
// the link's rate, shared with the RDMA traffic's reads), then it waits for the port.
void RcTransport::send_in_network(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  NicPort& n = port_at(ctx, nic);
  const std::int64_t payload =
      std::max<std::int64_t>(0, std::int64_t{pkt.bytes} - fabric::kRoceHeaderBytes);
  const SimTime read = pipe_.read_in_network(n.pipe, ctx.now(), payload);
  // In order: no later packet is ready before an earlier one.
  RingQueue<TxSlot>& q = n.arb.innet;
  const SimTime ready = std::max(read, q.empty() ? SimTime::zero() : q[q.size() - 1].ready);
  q.push(TxSlot{pkt, ready});
  wake_at(ctx, n, nic, ready);
}

// --- acknowledgements --------------------------------------------------------------------------

void RcTransport::complete_send(pdes::LpContext& ctx, QueuePair& qp, const Wqe& w, SimTime at,
                                WcStatus st) {
  if (st == WcStatus::kSuccess) {
    ++qp.stats.messages;
    qp.stats.bytes += static_cast<std::uint64_t>(w.wr.bytes);
  }
  if (!w.wr.signaled && st == WcStatus::kSuccess) return;
  Completion c;
  c.wr_id = w.wr.wr_id;
  c.endpoint = qp.id;
  c.opcode = w.wr.opcode;
  c.status = st;
  c.bytes = w.wr.bytes;
  c.posted = w.posted;
  c.first_byte = w.trace.sent_ps >= 0 ? SimTime::ps(w.trace.sent_ps) : SimTime::never();
  c.packets = w.packets;
  c.retransmitted = w.retransmitted;
  ctx.send(ctx.self(), at - ctx.now(), kEvCqe, qp.id, CqeMsg{qp.cq.stage(c)});
}

// Cumulative acknowledgement of every PSN below `psn`, learnt at `at`.
void RcTransport::acknowledge(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t psn, SimTime at) {
  NicPort& n = port_of(qp);
  const SimTime cqe = at + n.pipe.pcie.write_latency;
  if (uet_) {
    // PSNs acknowledged cumulatively leave the board (and its SACK credit).
    const std::uint32_t end = std::min(psn, qp.rq.max_sent);
    for (std::uint32_t q = qp.rq.una; q < end; ++q) {
      qp.rq.board.sacked_bytes -= qp.rq.board.release(q);
    }
  }
  const bool moved = qp.rq.acknowledge(psn, mtu_, [&](const Wqe& w) {
    // Without GPUDirect a READ's data lands in the bounce buffer and is copied to the GPU.
    const SimTime done =
        w.wr.opcode == Opcode::kRead ? cqe + pipe_.bounce_copy(n.pipe, w.wr.bytes) : cqe;
    complete_send(ctx, qp, w, done, WcStatus::kSuccess);
  });
  if (!moved) return;
  qp.rq.rto_deadline = qp.rq.una < qp.rq.max_sent ? ctx.now() + rto_ : SimTime::never();
  arm_rto(ctx, qp);
}

void RcTransport::on_ack(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt, SimTime at) {
  const RcHeader h = rc_header(pkt);
  // uet: an ACK of a PSN resent on suspicion gives no round trip (its first copy may be the one
  // that arrived); asked before the acknowledgement frees the PSN's slot.
  const bool karn = uet_ && h.op == kOpAck && qp.rq.board.suspect(unpack_echo(h.psn, h.arg));
  acknowledge(ctx, qp, h.psn, at);
  const std::uint32_t echo =
      uet_ && h.op == kOpAck ? on_sack(qp, h.psn, h.arg, ctx.now()) : h.arg;  // uet: a SACK
  cc::AckInfo info;
  info.acked = qp.rq.acked_bytes;
  if (h.int_echo != 0) info.utilization = h.int_echo / fabric::kTelemetryOne;
  if (needs_.ack_echo && h.op == kOpAck) ack_info(qp, h, karn ? kNoPsn : echo, ctx.now(), info);
  qp.cc->on_ack(ctx.now(), info);
  arm_cc_timer(ctx, qp);
  if (h.op == kOpNak) {
    ++qp.stats.naks_received;
    on_nak(qp, h.psn);
  }
  if (qp.has_more()) activate(ctx, qp);
}

// An unordered transport's ACK: the PSN it answers and those its bitmap names have arrived; then
// the holes that evidence makes losses are queued for a resend. Returns the echoed PSN.
std::uint32_t RcTransport::on_sack(QueuePair& qp, std::uint32_t cack, std::uint32_t arg,
                                   SimTime now) {
  Requester& rq = qp.rq;
  SackBoard& b = rq.board;
  const std::uint32_t echo = unpack_echo(cack, arg);
  if (echo == kNoPsn) return kNoPsn;
  if (echo >= rq.una && echo < rq.max_sent) b.sacked_bytes += b.sack(echo, now);
  const std::uint16_t bits = unpack_bits(arg);
  for (std::uint32_t i = 0; i < kSackBits; ++i) {
    if ((bits & (1u << i)) == 0 || echo < i + 1) continue;
    const std::uint32_t q = echo - 1 - i;
    if (q >= rq.una && q < rq.max_sent) b.sacked_bytes += b.sack(q, now);
  }
  b.detect(rq.una, rq.max_sent, rq.reorder(), [&](std::uint32_t psn) {
    ++qp.stats.sack_losses;
    rq.queue_resend(psn);
  });
  return echo;
}

// The echo of an ACK (CcNeeds::ack_echo): the CE mark of the packet it answers (PSN `echo`) and,
// if the ring still holds that packet's departure, its round trip and frame bytes.
void RcTransport::ack_info(const QueuePair& qp, const RcHeader& h, std::uint32_t echo, SimTime now,
                           cc::AckInfo& info) const {
  info.ecn = (h.flags & kEcnEcho) != 0;
  if (echo == kNoPsn) return;
  if (const Requester::Departure* d = qp.rq.departure(echo)) {
    info.rtt = now - d->at;
    info.bytes = d->bytes;
  }
}

// A switch trimmed data packet `psn` (fabric.trimming): it is resent now, without waiting for a
// hole's NAK or the timer, and the congestion control hears of the loss.
void RcTransport::on_trim_nack(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t psn) {
  ++qp.stats.nacks_received;
  catch_up_cc(ctx, qp);
  qp.cc->on_nack(ctx.now());
  arm_cc_timer(ctx, qp);
  if (uet_) {
    // A resend whose first copy arrived meanwhile needs no other; the loss detection must
    // not declare this hole lost again.
    if (qp.rq.board.sacked(psn) || psn < qp.rq.una) return;
    qp.rq.board.mark_lost(psn, true);
  }
  on_nak(qp, psn);
  if (qp.has_more()) activate(ctx, qp);
}

// A NAK names the PSN the responder expects: READs go back to it, WRITEs and SENDs recover as
// the retransmission strategy says.
void RcTransport::on_nak(QueuePair& qp, std::uint32_t psn) {
  if (psn >= qp.rq.max_sent) return;
  const std::uint32_t wi = qp.rq.seek(psn);
  if (wi < qp.rq.sq.size() && qp.rq.sq[wi].wr.opcode == Opcode::kRead) {
    qp.rq.go_back(psn);
  } else {
    retx_->on_nak(qp.rq, psn);
  }
}

void RcTransport::on_read_response(pdes::LpContext& ctx, QueuePair& qp, const Packet& pkt,
                                   SimTime at) {
  Requester& rq = qp.rq;
  const std::uint32_t psn = rc_header(pkt).psn;
  if (psn < rq.una) {
    ++qp.stats.duplicates;
    return;
  }
  if (psn > rq.una) {
    // Earlier PSNs of WRITEs/SENDs are implicitly acknowledged by a response; a hole in this
    // READ's responses is re-requested from the hole.
    const std::uint32_t wi = rq.seek(rq.una);
    const std::uint32_t ri = rq.seek(psn);
    if (wi < rq.sq.size() && rq.sq[wi].wr.opcode != Opcode::kRead && ri < rq.sq.size()) {
      acknowledge(ctx, qp, std::min(psn, rq.sq[ri].first_psn), at);
    }
    if (psn > rq.una) {
      ++qp.stats.out_of_order;
      if (qp.nak_psn != rq.una) {
        qp.nak_psn = rq.una;
        rq.go_back(rq.una);
        activate(ctx, qp);
      }
      return;
    }
  }
  // In order: place the payload, then it acknowledges its PSN.
  NicPort& n = port_of(qp);
  const std::int64_t payload = static_cast<std::int64_t>(pkt.bytes) - fabric::kRoceHeaderBytes;
  acknowledge(ctx, qp, psn + 1, pipe_.place(n.pipe, n.line, at, payload));
}

}  // namespace stepsim::nic
