#pragma once
// The RC transport of every NIC of one rank's servers: queue pairs (queue_pair.hpp) driven by
// work requests, packets and timers, on NIC ports that each have a pipeline (nic_pipeline.hpp)
// and an arbiter (nic_arbiter.hpp). Its files: rc_transport.cpp (set-up, timers, errors, CQEs),
// rc_requester.cpp (posting, building packets, ACKs, READ responses arriving) and
// rc_responder.cpp (requests arriving, ACK/NAK/CNP generation). RdmaHost adapts it to the fabric.
// Modelling choices beyond rdma_host.hpp's:
// - Receives are always posted (no RNR); a WRITE's or SEND's payload lands at increasing offsets
//   of one buffer per endpoint, which is what the translation cache sees.
// - READ recovery is go-back-N in both strategies: the requester re-requests from the missing PSN.
// - The requester learns of a lost ACK from the next one (cumulative) or a timeout.
// - transport.kind uet (Ultra Ethernet kind) is this transport with each packet's entropy its own
//   (ECMP sprays it), out-of-order placement always, an ACK with a SACK bitmap per packet and
//   the sender's reorder-tolerant loss detection (sack_board.hpp) instead of the receiver's
//   NAKs, and (for every kind) a trimmed packet NACKed by the receiver at once and resent by the
//   sender at once.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "src/nic/nic_arbiter.hpp"
#include "src/nic/nic_pipeline.hpp"
#include "src/nic/queue_pair.hpp"
#include "src/nic/rc_wire.hpp"
#include "src/nic/retransmission_strategy.hpp"
#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/model.hpp"

namespace stepsim::nic {

class RdmaHost;

/// One NIC port of a server.
struct NicPort {
  DataRate line;
  PipelineState pipe;
  NicArbiter arb;
  SimTime wake_at = SimTime::never();
  bool pulling = false;  ///< inside next_packet: the port is taking a packet, no wake needed
  NicStats stats;
};

struct ServerState {
  pdes::LpId node = 0;
  std::vector<NicPort> nics;
};

class RcTransport {
 public:
  /// Sets up the servers and endpoints among `local_lps`; `host` is told of wakes, CQs and
  /// in-network packets.
  RcTransport(RdmaHost& host, const NicParams& p, fabric::FabricModel& fabric,
              std::span<const pdes::LpId> local_lps, const std::vector<Connection>& connections);

  // Verbs.
  bool post(pdes::LpContext& ctx, std::uint32_t endpoint, const WorkRequest& wr);
  std::size_t poll_cq(std::uint32_t endpoint, std::span<Completion> out);
  [[nodiscard]] QpState state(std::uint32_t endpoint) const;
  void send_in_network(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt);

  // The fabric's side.
  bool next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool paused, fabric::Packet& out);
  void on_packet(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt);
  /// A transport event (every RcEvent but kEvAppTimer).
  void on_event(pdes::LpContext& ctx, const pdes::Event& ev);

  // Results.
  [[nodiscard]] const std::vector<QueuePair>& qps() const { return qps_; }
  [[nodiscard]] const std::vector<ServerState>& servers() const { return servers_; }
  /// Local server index of topology node `node` (kNone if not on this rank).
  [[nodiscard]] std::uint32_t server_of_node(pdes::LpId node) const {
    return server_of_node_[node];
  }
  [[nodiscard]] const std::vector<std::uint32_t>& qps_of_server(std::uint32_t s) const {
    return qps_of_server_[s];
  }
  [[nodiscard]] const fabric::FabricModel& fabric() const { return fabric_; }

 private:
  // --- set-up (rc_transport.cpp) ---
  void add_servers(std::span<const pdes::LpId> local_lps);
  void add_endpoints(const std::vector<Connection>& connections);
  void add_endpoint(const Connection& c, std::uint32_t connection, int side);

  // --- shared helpers (rc_transport.cpp) ---
  QueuePair& local(std::uint32_t endpoint) { return qps_[local_ep_[endpoint]]; }
  NicPort& port_of(const QueuePair& qp) { return servers_[qp.server].nics[qp.nic]; }
  NicPort& port_at(pdes::LpContext& ctx, std::uint32_t nic) {
    return servers_[server_of_slot_[ctx.slot()]].nics[nic];
  }
  void schedule_once(pdes::LpContext& ctx, SimTime& pending, SimTime at, std::uint32_t kind,
                     std::uint32_t aux);
  void wake_at(pdes::LpContext& ctx, NicPort& n, std::uint32_t nic, SimTime ready);
  void catch_up_cc(pdes::LpContext& ctx, QueuePair& qp);
  void arm_cc_timer(pdes::LpContext& ctx, QueuePair& qp);
  void arm_rto(pdes::LpContext& ctx, QueuePair& qp);
  void activate(pdes::LpContext& ctx, QueuePair& qp);
  void queue_ctrl(pdes::LpContext& ctx, QueuePair& qp, std::uint8_t op, std::uint32_t flow,
                  std::uint32_t psn, SimTime ready, std::uint16_t telemetry, std::uint32_t arg = 0,
                  std::uint8_t flags = 0);
  void on_nic_wake(pdes::LpContext& ctx, std::uint32_t nic);
  void on_pace(pdes::LpContext& ctx, QueuePair& qp);
  void on_cc_timer(pdes::LpContext& ctx, QueuePair& qp);
  void on_rto(pdes::LpContext& ctx, QueuePair& qp);
  void to_error(pdes::LpContext& ctx, QueuePair& qp, QpError why);
  void on_cqe(pdes::LpContext& ctx, QueuePair& qp, const CqeMsg& m);

  // --- requester (rc_requester.cpp) ---
  SimTime post_stages(QueuePair& qp, NicPort& n, Wqe& w, SimTime now);
  SimTime fetch_wqe(QueuePair& qp, NicPort& n, SimTime s, SimTime posted);
  void fill(pdes::LpContext& ctx, std::uint32_t server, std::uint32_t nic);
  bool next_of(pdes::LpContext& ctx, QueuePair& qp, NicPort& n, TxSlot& out);
  fabric::Packet packet_header(const QueuePair& qp) const;
  void build_read_response(QueuePair& qp, ReadJob& job, fabric::Packet& pkt, PacketWork& work);
  bool build_request(pdes::LpContext& ctx, QueuePair& qp, fabric::Packet& pkt, PacketWork& work,
                     Wqe*& first_of);
  void fill_request(const QueuePair& qp, const Wqe& w, std::uint32_t psn, fabric::Packet& pkt,
                    PacketWork& work) const;
  void after_sent(pdes::LpContext& ctx, QueuePair& qp, const NicPort& n, const fabric::Packet& pkt);
  void stamp_sent(QueuePair& qp, std::uint32_t psn, SimTime now);
  void complete_send(pdes::LpContext& ctx, QueuePair& qp, const Wqe& w, SimTime at, WcStatus st);
  void acknowledge(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t psn, SimTime at);
  void on_ack(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at);
  void on_nak(QueuePair& qp, std::uint32_t psn);
  void on_trim_nack(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t psn);
  std::uint32_t on_sack(QueuePair& qp, std::uint32_t cack, std::uint32_t arg, SimTime now);
  void ack_info(const QueuePair& qp, const RcHeader& h, std::uint32_t echo, SimTime now,
                cc::AckInfo& info) const;
  void on_read_response(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at);

  // --- responder (rc_responder.cpp) ---
  void on_transport_packet(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt,
                           SimTime at);
  void on_read_request(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at);
  void on_request(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at);
  void on_out_of_order(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at,
                       bool completes);
  void consume(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, bool completes,
               bool last, SimTime placed, std::uint32_t imm, bool ce);
  /// `pkt`: the data packet that asks for it (its PSN and CE mark are echoed with ack_echo).
  void send_ack(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t flow, SimTime at,
                std::uint16_t telemetry, const fabric::Packet& pkt);
  void on_trimmed(pdes::LpContext& ctx, QueuePair& qp, const fabric::Packet& pkt, SimTime at);
  void send_nak(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t flow, SimTime at);
  void notify_congestion(pdes::LpContext& ctx, QueuePair& qp, std::uint32_t sender, SimTime at);

  RdmaHost& host_;
  const NicParams& p_;
  fabric::FabricModel& fabric_;
  std::int64_t mtu_;       ///< payload per frame: the MTU, or the cell at cell fidelity
  std::int64_t wire_mtu_;  ///< the MTU (a cell pays the wire overhead of its packets)
  // Limits that the parameters count in packets (the send pipeline's slots, ACK coalescing, the
  // NAK threshold) count frames here, scaled to the same bytes (cell fidelity).
  std::size_t tx_slots_ = 64;
  int ack_coalesce_ = 8;
  std::uint32_t nak_threshold_ = 16;
  /// The retransmission timeout: transport.rto, stretched at cell fidelity when the send
  /// pipeline's 2-frame minimum holds more bytes than tx_slots packets would.
  SimTime rto_;
  SimTime qp_gap_;     ///< qp_in_order: per-QP spacing of WQEs
  cc::CcNeeds needs_;  ///< what the congestion control asks of the transport
  bool uet_ = false;   ///< transport.kind uet: per-packet entropy, unordered delivery
  NicPipeline pipe_;
  std::unique_ptr<RetransmissionStrategy> retx_;
  std::vector<std::uint32_t> server_of_slot_;  ///< by LP slot
  std::vector<ServerState> servers_;
  std::vector<QueuePair> qps_;           ///< local endpoints
  std::vector<std::uint32_t> local_ep_;  ///< by endpoint id: index in qps_, kNone if remote
  std::vector<std::vector<std::uint32_t>> qps_of_server_;
  std::vector<std::uint32_t> server_of_node_;  ///< by node id: local server index or kNone
};

// --- inline: called per packet from every part of the transport --------------------------------

/// transport.kind uet: the entropy of a QP's `n`-th transmission (its UDP source port, which
/// every switch hashes): each packet its own path under ECMP, the same on every rank.
[[nodiscard]] inline std::uint32_t spray_entropy(std::uint32_t qp_hash, std::uint32_t n) {
  return static_cast<std::uint32_t>(finalize64((static_cast<std::uint64_t>(qp_hash) << 32) | n));
}

inline void RcTransport::schedule_once(pdes::LpContext& ctx, SimTime& pending, SimTime at,
                                       std::uint32_t kind, std::uint32_t aux) {
  if (at >= pending) return;  // an event at or before `at` is already coming
  pending = at;
  ctx.send(ctx.self(), std::max(SimTime::zero(), at - ctx.now()), kind, aux);
}

inline void RcTransport::catch_up_cc(pdes::LpContext& ctx, QueuePair& qp) {
  for (SimTime t = qp.cc->next_timer(); t <= ctx.now(); t = qp.cc->next_timer()) {
    qp.cc->on_timer(t);
  }
}

// The algorithm's timers run only while the endpoint has packets to send; an idle endpoint
// catches up on the timers it missed when it has work again (catch_up_cc), with the same result,
// since nothing else reaches the algorithm while it is idle.
inline void RcTransport::arm_cc_timer(pdes::LpContext& ctx, QueuePair& qp) {
  if (!qp.has_more()) return;
  const SimTime t = qp.cc->next_timer();
  if (!t.is_never()) schedule_once(ctx, qp.cc_at, t, kEvCcTimer, qp.id);
}

}  // namespace stepsim::nic
