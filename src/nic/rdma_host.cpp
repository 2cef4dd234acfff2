// RDMA NICs and the RC transport (see rdma_host.hpp). Modelling choices, beyond the header's:
// - Pipeline stages are reservations on per-stage timelines, made when an item enters: an item
//   takes the unit that frees first, occupies it for the stage's cycles and leaves after the
//   stage's latency (at least its occupancy). Items enter in time order, so each stage is FIFO.
// - PSNs are 32-bit in the simulator (24-bit on the wire; a step never wraps them).
// - Receives are always posted (no RNR); a WRITE's or SEND's payload lands at increasing offsets
//   of one buffer per endpoint, which is what the translation cache sees.
// - READ recovery is go-back-N in both modes: the requester re-requests from the missing PSN.
// - The requester learns of a lost ACK from the next one (cumulative) or a timeout.
#include "stepsim/nic/rdma_host.hpp"

#include <algorithm>
#include <cstring>

#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/fabric/load_balancer.hpp"

namespace stepsim::nic {

using fabric::Packet;
using topology::kNone;
using topology::PortId;

namespace {

// Transport opcodes (Packet::op).
enum Op : std::uint8_t {
  kOpWrite = 1,
  kOpWriteImm = 2,
  kOpSend = 3,
  kOpReadReq = 4,
  kOpReadResp = 5,
  kOpAck = 6,
  kOpNak = 7,
  kOpCnp = 8,
};

// Host event kinds.
enum HostEvent : std::uint32_t {
  kEvWqeReady = fabric::kHostEventBase,  // aux: local endpoint; a WQE reached the NIC
  kEvNicWake,                            // aux: NIC port; the pipeline's head packet is ready
  kEvPace,                               // aux: local endpoint; its rate limiter allows a packet
  kEvRto,                                // aux: local endpoint
  kEvCcTimer,                            // aux: local endpoint
  kEvCqe,                                // aux: local endpoint; payload CqeMsg
  kEvAppTimer,                           // aux: the application's tag
  kEvPcieFault,                          // aux: NIC port; payload PcieFaultMsg
};

constexpr std::uint32_t kReadReqHeader = 16;  // RETH
constexpr std::uint32_t kNoPsn = 0xffffffffu;
constexpr int kMaxUnits = 8;

struct CqeMsg {
  std::uint64_t wr_id;
  std::int64_t bytes;
  std::int64_t posted_ps;
  Opcode opcode;
  std::uint8_t recv;
  WcStatus status;
  std::uint32_t imm = 0;
};
static_assert(sizeof(CqeMsg) <= pdes::kEventPayloadBytes);

struct PcieFaultMsg {
  std::int32_t gen;
};

Opcode opcode_of(std::uint8_t op) {
  switch (op) {
    case kOpWriteImm:
      return Opcode::kWriteImm;
    case kOpSend:
      return Opcode::kSend;
    case kOpReadReq:
    case kOpReadResp:
      return Opcode::kRead;
    default:
      return Opcode::kWrite;
  }
}

std::uint8_t op_of(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
      return kOpWrite;
    case Opcode::kWriteImm:
      return kOpWriteImm;
    case Opcode::kSend:
      return kOpSend;
    case Opcode::kRead:
      return kOpReadReq;
  }
  return kOpWrite;
}

// A stage's timing, resolved from StageParams at the NIC clock.
struct Stage {
  SimTime latency;
  SimTime occupancy;
  int units = 1;
};

struct Timeline {
  SimTime free[kMaxUnits];
  // Reserves one unit from `start` for `packets` packets' work (a cell at cell fidelity stands
  // for several); returns when the item (its first packet) leaves the stage.
  SimTime reserve(const Stage& st, SimTime start, std::int64_t packets = 1) {
    int u = 0;
    for (int i = 1; i < st.units; ++i) {
      if (free[i] < free[u]) u = i;
    }
    // The first packet leaves when it would alone; the unit stays busy for all of them.
    const SimTime begin = std::max(start, free[u]);
    free[u] = begin + st.occupancy * packets;
    return begin + std::max(st.latency, st.occupancy);
  }
};

// A set-associative cache of 64-bit keys with LRU replacement (QP contexts, translations). Its
// arrays are allocated on first use: a NIC that never sends or receives holds none (a 16k-GPU
// fabric has 16,384 NICs, most of them idle in any one collective).
class TagCache {
 public:
  TagCache() = default;
  TagCache(std::int64_t entries, int ways) {
    ways_ = static_cast<std::uint32_t>(
        std::max<std::int64_t>(1, std::min<std::int64_t>(ways, entries)));
    sets_ = static_cast<std::uint32_t>(std::max<std::int64_t>(1, entries / ways_));
  }
  // True on a hit; a miss installs the key.
  bool access(std::uint64_t key) {
    if (key == last_) return true;  // the entry just used (the common case) is the newest
    last_ = key;
    if (tags_.empty()) [[unlikely]] {
      tags_.assign(static_cast<std::size_t>(sets_) * ways_, kEmpty);
      stamp_.assign(tags_.size(), 0);
    }
    const std::size_t base = static_cast<std::size_t>(mix64(key) % sets_) * ways_;
    std::size_t victim = base;
    ++clock_;
    for (std::size_t i = base; i < base + ways_; ++i) {
      if (tags_[i] == key) {
        stamp_[i] = clock_;
        return true;
      }
      if (stamp_[i] < stamp_[victim]) victim = i;
    }
    tags_[victim] = key;
    stamp_[victim] = clock_;
    return false;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~0ULL;
  std::uint32_t sets_ = 1;
  std::uint32_t ways_ = 1;
  std::uint64_t clock_ = 0;
  std::uint64_t last_ = kEmpty;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint64_t> stamp_;
};

struct Wqe {
  WorkRequest wr;
  std::uint32_t first_psn = 0;
  std::uint32_t npkts = 1;
  SimTime posted;
  SimTime ready;  // reached the NIC (doorbell, context, WQE fetch done)
  MessageTrace trace;
};

struct TxSlot {
  Packet pkt;
  SimTime ready;
};

struct ReadJob {
  std::uint32_t first = 0;  // PSN of the first response
  std::uint32_t next = 0;   // next response to send
  std::uint32_t end = 0;    // one past the last
  std::int64_t bytes = 0;   // bytes requested from `first`
};

}  // namespace

struct Endpoint {
  std::uint32_t id = 0;      // global endpoint id
  std::uint32_t server = 0;  // local server index
  std::uint32_t nic = 0;     // port index within the server
  PortId peer_nic = 0;
  std::uint32_t hash = 0;  // 5-tuple hash of the packets it sends
  std::uint8_t prio = 3;
  QpState state = QpState::kReset;
  QpError error = QpError::kNone;
  std::unique_ptr<cc::CongestionControl> cc;
  bool paced = false;  // the rate limiter is below line rate
  SimTime next_allowed;
  SimTime pace_at = SimTime::never();
  SimTime cc_at = SimTime::never();
  bool active = false;  // in its NIC's list of endpoints with packets to send
  // Requester.
  RingQueue<Wqe> sq;
  std::uint32_t cursor = 0;  // index in sq of the WQE holding next_psn
  std::uint32_t next_wqe_psn = 0;
  std::uint32_t next_psn = 0;
  std::uint32_t una = 0;              // oldest unacknowledged PSN
  std::uint32_t max_sent = 0;         // one past the highest PSN sent
  std::vector<std::uint32_t> resend;  // selective repeat: PSNs to send again
  SimTime rto_deadline = SimTime::never();
  SimTime rto_at = SimTime::never();
  int retries = 0;
  SimTime fetch_issued = SimTime::never();  // last WQE fetch (prefetch batches)
  SimTime fetch_done;
  int fetch_batch = 0;
  SimTime last_ready = SimTime::zero() - SimTime::ms(1);  // the previous WQE's (qp_in_order)
  std::int64_t sent_bytes = 0;                            // frame bytes of new PSNs sent
  std::int64_t acked_bytes = 0;                           // frame bytes of PSNs acknowledged
  // Responder.
  std::uint32_t epsn = 0;
  std::uint32_t nak_psn = kNoPsn;
  int since_ack = 0;
  std::uint32_t held = 0;              // selective repeat: PSNs held past the hole
  std::vector<std::uint8_t> ooo;       // selective repeat ring: 1 received, 2 + completes a message
  std::vector<std::uint32_t> ooo_imm;  // ... and the immediate data of a message's last packet
  std::uint32_t recv_seq = 0;
  std::int64_t recv_bytes = 0;  // payload of the message being received
  cc::CnpGenerator cnp{SimTime::us(50)};
  std::vector<ReadJob> reads;
  // CQ.
  RingQueue<Completion> cq;
  QpStats stats;
  MessageTrace sent_trace;
  MessageTrace recv_trace;
};

struct NicState {
  DataRate line;
  PcieParams pcie;
  Timeline doorbell, ctx, wqe, gen, dma, mac, rx;
  SimTime rd_free;  // PCIe, NIC reading host/GPU memory
  SimTime wr_free;  // PCIe, NIC writing host/GPU memory
  TagCache ctx_cache;
  TagCache mtt;
  RingQueue<TxSlot> tx;               // packets in the send pipeline, in order
  RingQueue<TxSlot> ctrl;             // ACK, NAK, CNP
  RingQueue<TxSlot> innet;            // in-network (SHARP) packets
  bool innet_turn = false;            // round robin between innet and tx
  std::vector<std::uint32_t> active;  // local endpoints with packets to send
  std::uint32_t rr = 0;
  SimTime wake_at = SimTime::never();
  bool pulling = false;  // inside next_packet
  NicStats stats;
};

struct ServerState {
  pdes::LpId node = 0;
  std::vector<NicState> nics;
};

struct RdmaHost::Impl {
  RdmaHost& host;
  fabric::FabricModel* fabric = nullptr;
  const NicParams& p;
  Stage s_doorbell, s_ctx, s_wqe, s_gen, s_dma, s_mac, s_rx;
  std::int64_t mtu = 4096;       // payload per frame: the MTU, or the cell at cell fidelity
  std::int64_t wire_mtu = 4096;  // the MTU (a cell pays the wire overhead of its packets)
  // Limits that the parameters count in packets (the send pipeline's slots, ACK coalescing, the
  // NAK threshold) count frames here, scaled to the same bytes (cell fidelity; setup()).
  std::size_t tx_slots = 64;
  int ack_coalesce = 8;
  std::uint32_t nak_threshold = 16;
  SimTime qp_gap;                             // qp_in_order: per-QP spacing of WQEs
  bool int_request = false;                   // HPCC: data packets ask for INT
  bool cnps = false;                          // DCQCN: receivers send CNPs
  std::vector<std::uint32_t> server_of_slot;  // by LP slot
  std::vector<ServerState> servers;
  std::vector<Endpoint> eps;            // local endpoints
  std::vector<std::uint32_t> local_ep;  // by endpoint id: index in eps, kNone if remote
  std::vector<std::vector<std::uint32_t>> eps_of_server;
  std::vector<std::uint32_t> server_of_node;  // by node id: local server index, kNone if remote

  Impl(RdmaHost& h, const NicParams& params) : host(h), p(params) {}

  Stage stage(const StageParams& sp) const {
    return Stage{sp.latency, p.cycles(sp.cycles), sp.units};
  }
  // MTU packets a frame of `payload` bytes stands for; the per-packet stages work that many times.
  std::int64_t packets_in(std::int64_t payload) const {
    return fabric::packets_in_frame(payload, wire_mtu);
  }

  NicState& nic_of(Endpoint& e) { return servers[e.server].nics[e.nic]; }

  // Without GPUDirect (MemoryKind::kGpuBounce) a payload is copied between the GPU and a host
  // bounce buffer: a copy's launch latency plus the bytes over PCIe. Zero otherwise.
  SimTime bounce_copy(const NicState& n, std::int64_t bytes) const {
    if (p.memory != MemoryKind::kGpuBounce) return SimTime::zero();
    return p.bounce_copy_latency + transfer_time(n.pcie, Bytes(bytes));
  }

  // --- helpers -----------------------------------------------------------------------------
  std::int64_t payload_of(const Wqe& w, std::uint32_t psn) const {
    const std::int64_t k = psn - w.first_psn;
    return std::clamp<std::int64_t>(w.wr.bytes - k * mtu, 0, mtu);
  }
  std::int64_t frame_of(const Wqe& w, std::uint32_t psn) const {
    if (w.wr.opcode == Opcode::kRead) {
      return psn == w.first_psn ? fabric::kRoceHeaderBytes + kReadReqHeader : 0;
    }
    return payload_of(w, psn) + fabric::kRoceHeaderBytes;
  }
  // Index in sq of the WQE that holds `psn` (sq.size() if none).
  std::uint32_t seek(Endpoint& e, std::uint32_t psn) const {
    std::uint32_t i = 0;
    while (i < e.sq.size() && psn >= e.sq[i].first_psn + e.sq[i].npkts) ++i;
    return i;
  }

  void catch_up_cc(pdes::LpContext& ctx, Endpoint& e) {
    for (SimTime t = e.cc->next_timer(); t <= ctx.now(); t = e.cc->next_timer()) e.cc->on_timer(t);
  }

  void activate(pdes::LpContext& ctx, Endpoint& e) {
    if (e.state == QpState::kError) return;
    catch_up_cc(ctx, e);
    arm_cc_timer(ctx, e);
    if (!e.active) {
      e.active = true;
      nic_of(e).active.push_back(static_cast<std::uint32_t>(&e - eps.data()));
    }
    fill(ctx, e.server, e.nic);
  }

  void schedule_once(pdes::LpContext& ctx, SimTime& pending, SimTime at, std::uint32_t kind,
                     std::uint32_t aux) {
    if (at >= pending) return;  // an event at or before `at` is already coming
    pending = at;
    ctx.send(ctx.self(), std::max(SimTime::zero(), at - ctx.now()), kind, aux);
  }

  // The algorithm's timers run only while the endpoint has packets to send; an idle endpoint
  // catches up on the timers it missed when it has work again (catch_up_cc), with the same
  // result, since nothing else reaches the algorithm while it is idle.
  void arm_cc_timer(pdes::LpContext& ctx, Endpoint& e) {
    if (!has_more(e)) return;
    const SimTime t = e.cc->next_timer();
    if (!t.is_never()) {
      schedule_once(ctx, e.cc_at, t, kEvCcTimer, e.id);
    }
  }

  void arm_rto(pdes::LpContext& ctx, Endpoint& e) {
    if (e.rto_deadline.is_never()) return;
    schedule_once(ctx, e.rto_at, e.rto_deadline, kEvRto, e.id);
  }

  void queue_ctrl(pdes::LpContext& ctx, Endpoint& e, std::uint8_t op, std::uint32_t flow,
                  std::uint32_t psn, SimTime ready, std::uint16_t telemetry) {
    Packet c;
    c.flow = flow;
    c.seq = psn;
    c.dst_nic = e.peer_nic;
    c.bytes = fabric::kAckFrameBytes;
    c.op = op;
    c.prio = e.prio;
    c.telemetry = telemetry;
    c.tuple_hash = e.hash;
    NicState& n = nic_of(e);
    n.ctrl.push(TxSlot{c, ready});
    if (ready <= ctx.now()) {
      host.fabric_wake(ctx, e.nic);
    } else {
      schedule_once(ctx, n.wake_at, ready, kEvNicWake, e.nic);
    }
  }

  // --- posting -------------------------------------------------------------------------------
  bool post(pdes::LpContext& ctx, std::uint32_t endpoint, const WorkRequest& wr) {
    STEPSIM_CHECK(endpoint < local_ep.size() && local_ep[endpoint] != kNone,
                  "post on endpoint " + std::to_string(endpoint) + " which is not on this rank");
    Endpoint& e = eps[local_ep[endpoint]];
    STEPSIM_CHECK(servers[e.server].node == ctx.self(),
                  "post on endpoint " + std::to_string(endpoint) + " from another server");
    if (e.state != QpState::kRts) return false;
    NicState& n = nic_of(e);
    Wqe w;
    w.wr = wr;
    w.npkts = static_cast<std::uint32_t>(std::max<std::int64_t>(1, (wr.bytes + mtu - 1) / mtu));
    w.first_psn = e.next_wqe_psn;
    e.next_wqe_psn += w.npkts;
    w.posted = ctx.now();
    MessageTrace& tr = w.trace;
    tr.posted_ps = ctx.now().picoseconds();
    SimTime t = ctx.now() + p.post_overhead;
    if (wr.opcode != Opcode::kRead) t += bounce_copy(n, wr.bytes);  // GPU -> bounce buffer
    tr.post = (t - ctx.now()).picoseconds();
    const bool inl = wr.bytes <= p.inline_threshold && wr.opcode != Opcode::kRead;
    SimTime s = t + n.pcie.doorbell;
    if (inl) s += transfer_time(n.pcie, Bytes(64 + wr.bytes));  // BlueFlame: WQE and data
    s = n.doorbell.reserve(s_doorbell, s);
    tr.doorbell = (s - t).picoseconds();
    t = s;
    if (!n.ctx_cache.access(e.id)) {
      ++n.stats.ctx_misses;
      s += n.pcie.read_latency;
    } else {
      ++n.stats.ctx_hits;
    }
    s = n.ctx.reserve(s_ctx, s);
    tr.ctx_lookup = (s - t).picoseconds();
    t = s;
    if (!inl) {
      if (e.fetch_batch > 0 && e.fetch_issued >= w.posted && e.fetch_batch < p.wqe_prefetch) {
        ++e.fetch_batch;  // posted before the fetch went out: it rides on the same read
        s = std::max(s, e.fetch_done);
      } else {
        ++n.stats.wqe_fetches;
        e.fetch_issued = s;
        e.fetch_batch = 1;
        s += n.pcie.read_latency;
        e.fetch_done = s;
      }
      s = n.wqe.reserve(s_wqe, s);
    }
    if (p.qp_in_order) s = std::max(s, e.last_ready + qp_gap);
    tr.wqe_fetch = (s - t).picoseconds();
    w.ready = s;
    e.last_ready = s;
    e.sq.push(w);
    ctx.send(ctx.self(), w.ready - ctx.now(), kEvWqeReady, e.id);
    return true;
  }

  // --- send pipeline -------------------------------------------------------------------------
  // Builds the endpoint's next packet, if it has one it may send now.
  bool next_of(pdes::LpContext& ctx, Endpoint& e, NicState& n, TxSlot& out) {
    const SimTime now = ctx.now();
    if (e.state == QpState::kError) return false;
    if (e.paced && e.next_allowed > now) {
      schedule_once(ctx, e.pace_at, e.next_allowed, kEvPace, e.id);
      return false;
    }
    Packet pkt;
    pkt.dst_nic = e.peer_nic;
    pkt.prio = e.prio;
    pkt.tuple_hash = e.hash;
    if (int_request) pkt.flags |= fabric::kTelemetry;
    std::int64_t payload = 0;
    bool dma = true;
    std::uint64_t page_key = 0;
    Wqe* first_of = nullptr;
    // READ responses first (the responder side of this endpoint), then requests.
    ReadJob* job = nullptr;
    for (ReadJob& j : e.reads) {
      if (j.next < j.end) {
        job = &j;
        break;
      }
    }
    if (job != nullptr) {
      const std::int64_t k = job->next - job->first;
      payload = std::clamp<std::int64_t>(job->bytes - k * mtu, 0, mtu);
      pkt.flow = peer_endpoint(e.id);  // the requester's stream
      pkt.seq = job->next++;
      pkt.op = kOpReadResp;
      if (job->next == job->end) pkt.flags |= fabric::kLastOfFlow;
      pkt.bytes = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
      page_key = (static_cast<std::uint64_t>(e.id) << 32) |
                 static_cast<std::uint64_t>(k * mtu / p.page.count());
      if (job->next == job->end)
        std::erase_if(e.reads, [](const ReadJob& j) { return j.next >= j.end; });
    } else {
      std::uint32_t psn;
      std::uint32_t wi;
      bool from_list = false;  // a selective resend: the cursor does not move
      if (!e.resend.empty()) {
        psn = e.resend.front();
        e.resend.erase(e.resend.begin());
        wi = seek(e, psn);
        if (psn < e.una || wi >= e.sq.size()) return next_of(ctx, e, n, out);  // acked meanwhile
        from_list = true;
      } else {
        if (e.cursor >= e.sq.size()) return false;
        wi = e.cursor;
        if (e.sq[wi].ready > now) return false;  // its kEvWqeReady will come
        psn = e.next_psn;
      }
      const bool resend = from_list || psn < e.max_sent;
      Wqe& w = e.sq[wi];
      const std::uint32_t end = w.first_psn + w.npkts;
      const std::int64_t frame = frame_of(w, psn);
      const std::int64_t win = e.cc->window();
      const std::int64_t in_flight = e.sent_bytes - e.acked_bytes;
      if (!resend && win > 0 && in_flight > 0 && in_flight + frame > win) {
        if (from_list) e.resend.insert(e.resend.begin(), psn);
        return false;  // an ACK re-activates the endpoint
      }
      pkt.flow = e.id;
      pkt.seq = psn;
      pkt.op = op_of(w.wr.opcode);
      // A window-based algorithm (HPCC) needs every packet's feedback: AckReq on each.
      if (win > 0) pkt.flags |= fabric::kAckRequest;
      if (psn == w.first_psn) pkt.flags |= fabric::kFirstOfMessage;
      if (w.wr.opcode == Opcode::kRead) {
        // One request for the rest of the READ; the responses use its PSNs.
        const std::int64_t k = psn - w.first_psn;
        pkt.arg = static_cast<std::uint32_t>(w.wr.bytes - k * mtu);
        pkt.bytes = fabric::kRoceHeaderBytes + kReadReqHeader;
        pkt.flags |= fabric::kLastOfFlow;
        dma = false;
      } else {
        payload = payload_of(w, psn);
        pkt.bytes = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
        if (psn + 1 == end) {
          pkt.flags |= fabric::kLastOfFlow;
          pkt.arg = w.wr.imm;  // immediate data rides in the last packet
        }
        dma = w.wr.bytes > p.inline_threshold;
        const std::int64_t off = (psn - w.first_psn) * mtu;
        page_key = (static_cast<std::uint64_t>(e.id) << 32) |
                   static_cast<std::uint64_t>(off / p.page.count());
      }
      const std::uint32_t next = w.wr.opcode == Opcode::kRead ? end : psn + 1;
      if (psn >= e.max_sent) e.sent_bytes += frame;
      if (!from_list) {
        e.next_psn = next;
        if (next >= end) ++e.cursor;
      }
      e.max_sent = std::max(e.max_sent, next);
      if (resend) {
        ++e.stats.retransmitted;
      } else if (psn == w.first_psn) {
        first_of = &w;
      }
      if (e.rto_deadline.is_never()) {
        e.rto_deadline = now + p.rto;
        arm_rto(ctx, e);
      }
    }
    // The pipeline: packet generation, payload DMA (translation, memory latency, PCIe), MAC.
    // Generating a packet reads the QP's context (PSN, addresses): a miss reads it over PCIe,
    // which is what makes thousands of active QPs slower than a few.
    SimTime t0 = now;
    if (!n.ctx_cache.access(e.id)) {
      ++n.stats.ctx_misses;
      t0 += n.pcie.read_latency;
    } else {
      ++n.stats.ctx_hits;
    }
    const std::int64_t packets = packets_in(payload);
    SimTime t = n.gen.reserve(s_gen, t0, packets);
    const SimTime t1 = t;
    if (dma && payload > 0) {
      SimTime lat = n.pcie.dma_read_latency;
      if (p.memory == MemoryKind::kGpuRootComplex) lat = n.pcie.root_complex_read_latency;
      if (!n.mtt.access(page_key)) {
        ++n.stats.mtt_misses;
        lat += n.pcie.read_latency;
      } else {
        ++n.stats.mtt_hits;
      }
      t = n.dma.reserve(s_dma, t, packets);
      const SimTime start = std::max(t1 + lat, n.rd_free);
      n.rd_free = start + transfer_time(n.pcie, Bytes(payload));
      // A cell goes out once its first packet's bytes are in (cut-through, as its packets would).
      t = std::max(t, start + transfer_time(n.pcie, Bytes(std::min(payload, wire_mtu))));
    }
    const SimTime t2 = t;
    t = n.mac.reserve(s_mac, t, packets);
    if (first_of != nullptr) {
      MessageTrace& tr = first_of->trace;
      tr.pkt_gen = (t1 - t0).picoseconds() + (t0 - first_of->ready).picoseconds();
      tr.dma = (t2 - t1).picoseconds();
      tr.mac = (t - t2).picoseconds();
    }
    ++e.stats.packets;
    e.cc->on_sent(now, pkt.bytes);
    arm_cc_timer(ctx, e);
    const DataRate r = e.cc->rate();
    e.paced = r < n.line;
    if (e.paced) {
      e.next_allowed = now + r.serialization_time(Bytes(fabric::wire_bytes(pkt.bytes, wire_mtu)));
    }
    out = TxSlot{pkt, t};
    return true;
  }

  bool has_more(const Endpoint& e) const {
    if (!e.resend.empty()) return true;
    for (const ReadJob& j : e.reads) {
      if (j.next < j.end) return true;
    }
    return e.cursor < e.sq.size();
  }

  // Fills the NIC's send pipeline from its active endpoints, round robin.
  void fill(pdes::LpContext& ctx, std::uint32_t server, std::uint32_t nic) {
    NicState& n = servers[server].nics[nic];
    while (n.tx.size() < tx_slots && !n.active.empty()) {
      const auto count = static_cast<std::uint32_t>(n.active.size());
      if (n.rr >= count) n.rr = 0;
      const std::uint32_t li = n.active[n.rr];
      Endpoint& e = eps[li];
      TxSlot slot;
      if (next_of(ctx, e, n, slot)) {
        n.tx.push(slot);
        n.rr = (n.rr + 1) % count;
        continue;
      }
      // Nothing now: leave the list; a WQE, an ACK, a NAK, a timeout or the pacer brings it back.
      e.active = false;
      n.active[n.rr] = n.active.back();
      n.active.pop_back();
    }
    if (n.tx.empty() && n.ctrl.empty()) return;
    const SimTime head = std::min(n.tx.empty() ? SimTime::never() : n.tx.front().ready,
                                  n.ctrl.empty() ? SimTime::never() : n.ctrl.front().ready);
    if (head > ctx.now()) {
      schedule_once(ctx, n.wake_at, head, kEvNicWake, nic);
    } else if (!n.pulling) {
      host.fabric_wake(ctx, nic);
    }
  }

  bool next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool paused, Packet& out) {
    const std::uint32_t s = server_of_slot[ctx.slot()];
    NicState& n = servers[s].nics[nic];
    const SimTime now = ctx.now();
    auto allowed = [&](const Packet& x) { return !paused || !fabric->lossless(x.prio); };
    if (!n.ctrl.empty() && n.ctrl.front().ready <= now && allowed(n.ctrl.front().pkt)) {
      out = n.ctrl.pop().pkt;
      ++n.stats.tx_packets;
      return true;
    }
    const bool innet_ready =
        !n.innet.empty() && n.innet.front().ready <= now && allowed(n.innet.front().pkt);
    const bool tx_ready = !n.tx.empty() && n.tx.front().ready <= now && allowed(n.tx.front().pkt);
    if (innet_ready && (n.innet_turn || !tx_ready)) {
      out = n.innet.pop().pkt;
      n.innet_turn = false;
      ++n.stats.tx_packets;
      ++n.stats.in_network_tx;
      return true;
    }
    if (tx_ready) {
      n.innet_turn = true;
      out = n.tx.pop().pkt;
      ++n.stats.tx_packets;
      if ((out.flags & fabric::kFirstOfMessage) != 0) {
        Endpoint& e = eps[local_ep[out.flow]];
        const std::uint32_t wi = seek(e, out.seq);
        if (wi < e.sq.size() && e.sq[wi].trace.sent_ps < 0) {
          e.sq[wi].trace.sent_ps = now.picoseconds();
          e.sent_trace = e.sq[wi].trace;
        }
      }
      n.pulling = true;  // the port is sending this packet: no wake from inside
      fill(ctx, s, nic);
      n.pulling = false;
      return true;
    }
    SimTime head = SimTime::never();
    if (!n.ctrl.empty() && n.ctrl.front().ready > now) head = n.ctrl.front().ready;
    if (!n.tx.empty() && n.tx.front().ready > now) head = std::min(head, n.tx.front().ready);
    if (!n.innet.empty() && n.innet.front().ready > now) {
      head = std::min(head, n.innet.front().ready);
    }
    if (!head.is_never()) schedule_once(ctx, n.wake_at, head, kEvNicWake, nic);
    return false;
  }

  // An in-network packet: its payload is read over PCIe (the DMA read latency, then the bytes
  // at the link's rate, shared with the RDMA traffic's reads), then it waits for the port.
  void send_in_network(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
    NicState& n = servers[server_of_slot[ctx.slot()]].nics[nic];
    const std::int64_t payload =
        std::max<std::int64_t>(0, std::int64_t{pkt.bytes} - fabric::kRoceHeaderBytes);
    const SimTime start = std::max(ctx.now() + n.pcie.dma_read_latency, n.rd_free);
    n.rd_free = start + transfer_time(n.pcie, Bytes(payload));
    // In order: no later packet is ready before an earlier one.
    const SimTime ready =
        std::max(n.rd_free, n.innet.empty() ? SimTime::zero() : n.innet[n.innet.size() - 1].ready);
    n.innet.push(TxSlot{pkt, ready});
    if (ready <= ctx.now()) {
      host.fabric_wake(ctx, nic);
    } else {
      schedule_once(ctx, n.wake_at, ready, kEvNicWake, nic);
    }
  }

  // --- receive -------------------------------------------------------------------------------
  void complete_send(pdes::LpContext& ctx, Endpoint& e, const Wqe& w, SimTime at, WcStatus st) {
    if (st == WcStatus::kSuccess) {
      ++e.stats.messages;
      e.stats.bytes += static_cast<std::uint64_t>(w.wr.bytes);
    }
    if (!w.wr.signaled && st == WcStatus::kSuccess) return;
    CqeMsg m{w.wr.wr_id, w.wr.bytes, w.posted.picoseconds(), w.wr.opcode, 0, st};
    ctx.send(ctx.self(), at - ctx.now(), kEvCqe, e.id, m);
  }

  // Cumulative acknowledgement of every PSN below `psn`.
  void acknowledge(pdes::LpContext& ctx, Endpoint& e, std::uint32_t psn, SimTime at) {
    if (psn <= e.una) return;
    psn = std::min(psn, e.max_sent);
    if (psn <= e.una) return;
    NicState& n = nic_of(e);
    const SimTime cqe = at + n.pcie.write_latency;
    while (e.una < psn && !e.sq.empty()) {
      Wqe& w = e.sq.front();
      const std::uint32_t end = std::min(psn, w.first_psn + w.npkts);
      for (std::uint32_t q = e.una; q < end; ++q) e.acked_bytes += frame_of(w, q);
      e.una = end;
      if (e.una < w.first_psn + w.npkts) break;
      // Without GPUDirect a READ's data lands in the bounce buffer and is copied to the GPU.
      const SimTime done = w.wr.opcode == Opcode::kRead ? cqe + bounce_copy(n, w.wr.bytes) : cqe;
      complete_send(ctx, e, w, done, WcStatus::kSuccess);
      e.sq.pop();
      if (e.cursor > 0) --e.cursor;
    }
    if (e.next_psn < e.una) {
      e.next_psn = e.una;
      e.cursor = seek(e, e.next_psn);
    }
    std::erase_if(e.resend, [&](std::uint32_t q) { return q < e.una; });
    e.retries = 0;
    e.rto_deadline = e.una < e.max_sent ? ctx.now() + p.rto : SimTime::never();
    arm_rto(ctx, e);
  }

  void on_ack(pdes::LpContext& ctx, Endpoint& e, const Packet& pkt, SimTime at) {
    acknowledge(ctx, e, pkt.seq, at);
    cc::AckInfo info;
    info.acked = e.acked_bytes;
    if ((pkt.telemetry) != 0) info.utilization = pkt.telemetry / fabric::kTelemetryOne;
    e.cc->on_ack(ctx.now(), info);
    arm_cc_timer(ctx, e);
    if (pkt.op == kOpNak) {
      ++e.stats.naks_received;
      const std::uint32_t psn = pkt.seq;
      if (psn < e.max_sent) {
        const std::uint32_t wi = seek(e, psn);
        if (p.retransmission == Retransmission::kGoBackN ||
            (wi < e.sq.size() && e.sq[wi].wr.opcode == Opcode::kRead)) {
          e.next_psn = psn;
          e.cursor = seek(e, psn);
        } else if (std::find(e.resend.begin(), e.resend.end(), psn) == e.resend.end()) {
          e.resend.push_back(psn);
        }
      }
    }
    if (has_more(e)) activate(ctx, e);
  }

  void on_read_response(pdes::LpContext& ctx, Endpoint& e, const Packet& pkt, SimTime at) {
    const std::uint32_t psn = pkt.seq;
    if (psn < e.una) {
      ++e.stats.duplicates;
      return;
    }
    if (psn > e.una) {
      // Earlier PSNs of WRITEs/SENDs are implicitly acknowledged by a response; a hole in this
      // READ's responses is re-requested from the hole.
      const std::uint32_t wi = seek(e, e.una);
      const std::uint32_t ri = seek(e, psn);
      if (wi < e.sq.size() && e.sq[wi].wr.opcode != Opcode::kRead && ri < e.sq.size()) {
        acknowledge(ctx, e, std::min(psn, e.sq[ri].first_psn), at);
      }
      if (psn > e.una) {
        ++e.stats.out_of_order;
        if (e.nak_psn != e.una) {
          e.nak_psn = e.una;
          e.next_psn = e.una;
          e.cursor = seek(e, e.una);
          activate(ctx, e);
        }
        return;
      }
    }
    // In order: place the payload, then it acknowledges its PSN.
    NicState& n = nic_of(e);
    const std::int64_t payload = static_cast<std::int64_t>(pkt.bytes) - fabric::kRoceHeaderBytes;
    acknowledge(ctx, e, psn + 1, place(n, at, payload));
  }

  void on_request(pdes::LpContext& ctx, Endpoint& e, const Packet& pkt, SimTime at) {
    NicState& n = nic_of(e);
    const std::uint32_t psn = pkt.seq;
    const std::uint32_t flow = pkt.flow;
    if (pkt.op == kOpReadReq) {
      const auto np =
          static_cast<std::uint32_t>(std::max<std::int64_t>(1, (pkt.arg + mtu - 1) / mtu));
      if (psn > e.epsn) {
        ++e.stats.out_of_order;
        send_nak(ctx, e, flow, at);
        return;
      }
      if (psn < e.epsn) ++e.stats.duplicates;
      // New or repeated: (re)send the responses from psn.
      bool resumed = false;
      for (ReadJob& j : e.reads) {
        if (psn >= j.first && psn < j.end) {
          j.next = psn;
          resumed = true;
        }
      }
      if (!resumed) e.reads.push_back(ReadJob{psn, psn, psn + np, pkt.arg});
      e.epsn = std::max(e.epsn, psn + np);
      e.nak_psn = kNoPsn;
      std::erase_if(e.reads, [](const ReadJob& j) { return j.next >= j.end; });
      activate(ctx, e);
      return;
    }
    const std::int64_t payload = static_cast<std::int64_t>(pkt.bytes) - fabric::kRoceHeaderBytes;
    const bool last = (pkt.flags & fabric::kLastOfFlow) != 0;
    const bool completes = last && (pkt.op == kOpSend || pkt.op == kOpWriteImm);
    if (psn < e.epsn) {
      ++e.stats.duplicates;
      send_ack(ctx, e, flow, at, pkt.telemetry);
      return;
    }
    if (psn > e.epsn) {
      ++e.stats.out_of_order;
      if (p.retransmission == Retransmission::kSelective &&
          psn - e.epsn < static_cast<std::uint32_t>(p.sr_window)) {
        std::uint8_t& slot = e.ooo[psn & (p.sr_window - 1)];
        if (slot == 0) {
          slot = completes ? 2 : 1;
          e.ooo_imm[psn & (p.sr_window - 1)] = pkt.arg;
          ++e.held;
          place(n, at, payload);
        }
        if (e.held >= nak_threshold) send_nak(ctx, e, flow, at);
      } else if (p.retransmission == Retransmission::kGoBackN) {
        send_nak(ctx, e, flow, at);
      }
      return;
    }
    // In order.
    SimTime placed = place(n, at, payload);
    e.recv_bytes += payload;
    e.recv_trace.arrived_ps = ctx.now().picoseconds();
    bool ack_now = last || (pkt.flags & fabric::kAckRequest) != 0;
    auto consume = [&](bool done_msg, SimTime when, std::uint32_t imm) {
      ++e.epsn;
      ++e.since_ack;
      if (done_msg) {
        ++e.stats.recv_messages;
        const SimTime cqe = when + n.pcie.write_latency + bounce_copy(n, e.recv_bytes);
        e.recv_trace.placed_ps = when.picoseconds();
        e.recv_trace.cqe_ps = cqe.picoseconds();
        CqeMsg m{e.recv_seq++, e.recv_bytes, -1, opcode_of(pkt.op), 1, WcStatus::kSuccess, imm};
        e.recv_bytes = 0;
        ctx.send(ctx.self(), cqe - ctx.now(), kEvCqe, e.id, m);
      } else if (last) {
        e.recv_trace.placed_ps = when.picoseconds();
        e.recv_bytes = 0;
      }
    };
    consume(completes, placed, pkt.arg);
    if (p.retransmission == Retransmission::kSelective) {
      while (e.held > 0) {
        std::uint8_t& slot = e.ooo[e.epsn & (p.sr_window - 1)];
        if (slot == 0) break;
        const bool c = slot == 2;
        slot = 0;
        --e.held;
        consume(c, placed, e.ooo_imm[e.epsn & (p.sr_window - 1)]);
        ack_now = true;
      }
    }
    if (e.nak_psn != kNoPsn && e.nak_psn < e.epsn) e.nak_psn = kNoPsn;
    if (e.held > 0 && e.held >= nak_threshold) {
      send_nak(ctx, e, flow, at);  // the next hole is known already
    } else if (ack_now || e.since_ack >= ack_coalesce) {
      send_ack(ctx, e, flow, at, pkt.telemetry);
    }
  }

  // Writes a payload that arrived (its tail) at `at` over PCIe; returns when it is in memory. A
  // cell's write starts when its first packet arrived, as its packets' writes would, and ends no
  // sooner than its last packet's would.
  SimTime place(NicState& n, SimTime at, std::int64_t payload) {
    SimTime head = at;
    if (payload > wire_mtu) {
      const auto frame = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
      const auto first = static_cast<std::uint32_t>(wire_mtu + fabric::kRoceHeaderBytes);
      head -= n.line.serialization_time(
          Bytes(fabric::wire_bytes(frame, wire_mtu) - fabric::wire_bytes(first, wire_mtu)));
    }
    n.wr_free = std::max(std::max(head, n.wr_free) + transfer_time(n.pcie, Bytes(payload)),
                         at + transfer_time(n.pcie, Bytes(std::min(payload, wire_mtu))));
    return n.wr_free;
  }

  void send_ack(pdes::LpContext& ctx, Endpoint& e, std::uint32_t flow, SimTime at,
                std::uint16_t telemetry) {
    e.since_ack = 0;
    ++e.stats.acks_sent;
    queue_ctrl(ctx, e, kOpAck, flow, e.epsn, at, telemetry);
  }

  void send_nak(pdes::LpContext& ctx, Endpoint& e, std::uint32_t flow, SimTime at) {
    if (e.nak_psn == e.epsn) return;  // one NAK per hole
    e.nak_psn = e.epsn;
    e.since_ack = 0;
    ++e.stats.naks_sent;
    queue_ctrl(ctx, e, kOpNak, flow, e.epsn, at, 0);
  }

  void on_packet(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
    const std::uint32_t s = server_of_slot[ctx.slot()];
    NicState& n = servers[s].nics[nic];
    ++n.stats.rx_packets;
    if ((pkt.flags & fabric::kInNetwork) != 0) {
      ++n.stats.in_network_rx;
      host.notify_in_network(ctx, nic, pkt);
      return;
    }
    // The packet's flow is the requester's endpoint; requests are handled by its peer here,
    // responses and acknowledgements by the requester itself. A CNP names the endpoint to slow.
    const bool to_requester =
        pkt.op == kOpAck || pkt.op == kOpNak || pkt.op == kOpReadResp || pkt.op == kOpCnp;
    const std::uint32_t id = to_requester ? pkt.flow : peer_endpoint(pkt.flow);
    const std::uint32_t li = id < local_ep.size() ? local_ep[id] : kNone;
    STEPSIM_CHECK(li != kNone, "packet for endpoint " + std::to_string(id) + " not on this rank");
    Endpoint& e = eps[li];
    SimTime at = ctx.now();
    if (!n.ctx_cache.access(e.id)) {
      ++n.stats.ctx_misses;
      at += n.pcie.read_latency;
    } else {
      ++n.stats.ctx_hits;
    }
    at = n.rx.reserve(s_rx, at, packets_in(std::int64_t{pkt.bytes} - fabric::kRoceHeaderBytes));
    if (e.state == QpState::kError) return;
    switch (pkt.op) {
      case kOpCnp:
        ++e.stats.cnps_received;
        catch_up_cc(ctx, e);  // timers due before the CNP come first
        e.cc->on_cnp(ctx.now());
        arm_cc_timer(ctx, e);
        return;
      case kOpAck:
      case kOpNak:
        on_ack(ctx, e, pkt, at);
        return;
      case kOpReadResp:
        on_read_response(ctx, e, pkt, at);
        if ((pkt.flags & fabric::kEcnCe) != 0) notify_congestion(ctx, e, pkt.flow ^ 1u, at);
        return;
      default:
        if ((pkt.flags & fabric::kEcnCe) != 0) notify_congestion(ctx, e, pkt.flow, at);
        on_request(ctx, e, pkt, at);
        return;
    }
  }

  // DCQCN's notification point: at most one CNP per QP and interval, to the data's sender.
  void notify_congestion(pdes::LpContext& ctx, Endpoint& e, std::uint32_t sender, SimTime at) {
    ++e.stats.ecn_received;
    if (!cnps) return;
    if (!e.cnp.on_packet(ctx.now(), true)) return;
    ++e.stats.cnps_sent;
    queue_ctrl(ctx, e, kOpCnp, sender, kNoPsn, at, 0);
  }

  // --- timers ---------------------------------------------------------------------------------
  void on_rto(pdes::LpContext& ctx, Endpoint& e) {
    e.rto_at = SimTime::never();
    if (e.state == QpState::kError || e.rto_deadline.is_never()) return;
    if (ctx.now() < e.rto_deadline) {
      arm_rto(ctx, e);
      return;
    }
    ++e.stats.timeouts;
    if (++e.retries > p.retry_count) {
      to_error(ctx, e, QpError::kRetryExceeded);
      return;
    }
    if (p.retransmission == Retransmission::kGoBackN ||
        (!e.sq.empty() && e.sq.front().wr.opcode == Opcode::kRead)) {
      e.next_psn = e.una;
      e.cursor = seek(e, e.una);
      e.nak_psn = kNoPsn;
    } else if (std::find(e.resend.begin(), e.resend.end(), e.una) == e.resend.end()) {
      e.resend.push_back(e.una);
    }
    e.rto_deadline = ctx.now() + p.rto;
    arm_rto(ctx, e);
    activate(ctx, e);
  }

  void to_error(pdes::LpContext& ctx, Endpoint& e, QpError why) {
    e.state = QpState::kError;
    e.error = why;
    e.rto_deadline = SimTime::never();
    // The failed WQE completes in error; the rest are flushed.
    bool first = true;
    while (!e.sq.empty()) {
      const Wqe w = e.sq.pop();
      CqeMsg m{w.wr.wr_id,  w.wr.bytes, w.posted.picoseconds(),
               w.wr.opcode, 0,          first ? WcStatus::kRetryExceeded : WcStatus::kFlushed};
      if (why == QpError::kRetryExceeded) {
        ctx.send(ctx.self(), SimTime::zero(), kEvCqe, e.id, m);
      }
      first = false;
    }
    e.cursor = 0;
    e.resend.clear();
    e.reads.clear();
  }

  void on_cqe(pdes::LpContext& ctx, Endpoint& e, const CqeMsg& m) {
    NicState& n = nic_of(e);
    if (e.cq.size() >= static_cast<std::size_t>(p.cq_depth)) {
      ++n.stats.cq_overflows;
      if (e.state != QpState::kError) to_error(ctx, e, QpError::kCqOverflow);
      return;
    }
    Completion c;
    c.wr_id = m.wr_id;
    c.endpoint = e.id;
    c.opcode = m.opcode;
    c.recv = m.recv != 0;
    c.status = m.status;
    c.bytes = m.bytes;
    c.imm = m.imm;
    c.posted = SimTime::ps(m.posted_ps);
    c.done = ctx.now();
    e.cq.push(c);
    host.notify_app(ctx, e.id);
  }
};

// --- RdmaHost ----------------------------------------------------------------------------------

RdmaHost::RdmaHost(NicParams params, std::vector<Connection> connections, RdmaApp* app)
    : params_(std::move(params)), connections_(std::move(connections)), app_(app) {
  STEPSIM_CHECK(params_.validate().ok(), "invalid NIC parameters");
}

RdmaHost::~RdmaHost() = default;

PcieParams RdmaHost::pcie_for(DataRate port_rate) const {
  return size_for_port(params_.pcie, port_rate);
}

SimTime RdmaHost::base_rtt(const topology::Topology& topo, const fabric::Routing& routing,
                           const fabric::FabricParams& fp, PortId a, PortId b) {
  // Walk the first equal-cost path both ways: link latencies, switch pipelines, and the
  // serialization of an MTU frame (data) and an ACK at every hop.
  const DataRate rate = routing.port(a).rate;
  const SimTime data_ser = rate.serialization_time(
      Bytes(fp.mtu.count() + fabric::kRoceHeaderBytes + fabric::kWireOverheadBytes));
  const SimTime ack_ser =
      rate.serialization_time(Bytes(fabric::kAckFrameBytes + fabric::kWireOverheadBytes));
  SimTime one_way = routing.port(a).latency;
  int links = 1;
  int switches = 0;
  topology::NodeId v = routing.edge_of_nic(a);
  const topology::NodeId dst_edge = routing.edge_of_nic(b);
  while (v != dst_edge && switches < 64) {
    const auto cand = routing.candidates(v, b);
    if (cand.empty()) break;
    const PortId out = topo.nodes[v].first_port + cand[0];
    one_way += routing.port(out).latency;
    v = routing.port(out).peer_node;
    ++links;
    ++switches;
  }
  ++switches;
  ++links;
  one_way += routing.port(b).latency;
  const SimTime sw = fp.sw.latency * switches;
  return one_way * 2 + sw * 2 + data_ser * links + ack_ser * links;
}

void RdmaHost::setup(fabric::FabricModel& fabric, std::span<const pdes::LpId> local_lps) {
  impl_ = std::make_unique<Impl>(*this, params_);
  Impl& m = *impl_;
  m.fabric = &fabric;
  const topology::Topology& topo = fabric.topology();
  const fabric::Routing& routing = fabric.routing();
  m.mtu = fabric.params().segment().count();
  m.wire_mtu = fabric.params().mtu.count();
  const std::int64_t per_cell = m.packets_in(m.mtu);  // 1 at packet fidelity
  const auto per_frame = [per_cell](int packets) {
    return static_cast<std::uint32_t>(
        std::max<std::int64_t>(1, (packets + per_cell - 1) / per_cell));
  };
  m.tx_slots = std::max<std::uint32_t>(2, per_frame(params_.tx_slots));
  m.ack_coalesce = static_cast<int>(per_frame(params_.ack_coalesce));
  m.nak_threshold = per_frame(params_.nak_threshold);

  const NicParams& p = params_;
  m.s_doorbell = m.stage(p.doorbell);
  m.s_ctx = m.stage(p.ctx_lookup);
  m.s_wqe = m.stage(p.wqe_fetch);
  m.s_gen = m.stage(p.pkt_gen);
  m.s_dma = m.stage(p.dma);
  m.s_mac = m.stage(p.mac_tx);
  m.s_rx = m.stage(p.rx);
  m.int_request = p.cc.algorithm == "hpcc";
  m.cnps = p.cc.algorithm == "dcqcn";
  m.qp_gap = p.cycles(p.ctx_lookup.cycles) + p.cycles(p.wqe_fetch.cycles) + p.pkt_gen.latency;
  m.server_of_slot.assign(local_lps.size(), kNone);
  std::vector<std::uint32_t>& server_of_node = m.server_of_node;
  server_of_node.assign(topo.nodes.size(), kNone);
  for (std::uint32_t slot = 0; slot < local_lps.size(); ++slot) {
    const pdes::LpId v = local_lps[slot];
    if (!topo.is_server(v)) continue;
    const auto s = static_cast<std::uint32_t>(m.servers.size());
    m.server_of_slot[slot] = s;
    server_of_node[v] = s;
    ServerState& ss = m.servers.emplace_back();
    ss.node = v;
    ss.nics.resize(topo.nodes[v].port_count);
    for (std::uint32_t i = 0; i < ss.nics.size(); ++i) {
      NicState& n = ss.nics[i];
      const PortId gp = topo.nodes[v].first_port + i;
      n.line = routing.port(gp).rate;
      n.pcie = pcie_for(n.line);
      n.ctx_cache = TagCache(p.qp_cache.count() / p.qp_context.count(), 8);
      n.mtt = TagCache(p.mtt_entries, 8);
    }
  }
  m.eps_of_server.assign(m.servers.size(), {});
  m.local_ep.assign(connections_.size() * 2, kNone);
  std::size_t count = 0;
  for (const Connection& c : connections_) {
    for (PortId port : {c.a, c.b}) {
      STEPSIM_CHECK(port < topo.ports.size() && topo.is_server(topo.ports[port].node),
                    "a connection names port " + std::to_string(port) + ", not a server port");
      if (server_of_node[topo.ports[port].node] != kNone) ++count;
    }
  }
  m.eps.reserve(count);
  for (std::uint32_t ci = 0; ci < connections_.size(); ++ci) {
    const Connection& c = connections_[ci];
    for (int side = 0; side < 2; ++side) {
      const PortId mine = side == 0 ? c.a : c.b;
      const PortId peer = side == 0 ? c.b : c.a;
      const std::uint32_t s = server_of_node[topo.ports[mine].node];
      if (s == kNone) continue;
      const std::uint32_t id = endpoint_of(ci, side);
      m.local_ep[id] = static_cast<std::uint32_t>(m.eps.size());
      m.eps_of_server[s].push_back(static_cast<std::uint32_t>(m.eps.size()));
      Endpoint& e = m.eps.emplace_back();
      e.id = id;
      e.server = s;
      e.nic = topo.ports[mine].index;
      e.peer_nic = peer;
      e.prio = c.prio;
      e.hash = fabric::tuple_hash(mine, peer, c.entropy, c.label);
      cc::CcPath path{routing.port(mine).rate,
                      base_rtt(topo, routing, fabric.params(), mine, peer)};
      auto made = cc::make_congestion_control(p.cc, path);
      STEPSIM_CHECK(made.ok(), made.ok() ? std::string() : made.error().message);
      e.cc = std::move(made).value();
      e.cnp = cc::CnpGenerator(p.cc.dcqcn.cnp_interval);
      if (p.retransmission == Retransmission::kSelective) {
        e.ooo.assign(p.sr_window, 0);
        e.ooo_imm.assign(p.sr_window, 0);
      }
      // Connection set-up: RESET -> INIT -> RTR -> RTS (instant; the step starts connected).
      for (QpState st : {QpState::kInit, QpState::kRtr, QpState::kRts}) {
        STEPSIM_CHECK(transition_allowed(e.state, st), "QP bring-up");
        e.state = st;
      }
    }
  }
}

void RdmaHost::init_server(pdes::LpContext& ctx) {
  Impl& m = *impl_;
  const topology::Topology& topo = m.fabric->topology();
  for (const PcieFault& f : params_.pcie_faults) {
    if (topo.ports[f.nic].node != ctx.self()) continue;
    ctx.send(ctx.self(), f.at, kEvPcieFault, topo.ports[f.nic].index, PcieFaultMsg{f.gen});
  }
  if (app_ != nullptr) {  // every server: an application may use NVLink only
    VerbsOnServer v(*this, ctx);
    app_->on_start(v);
  }
}

bool RdmaHost::next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool lossless_paused,
                           Packet& out) {
  return impl_->next_packet(ctx, nic, lossless_paused, out);
}

void RdmaHost::on_packet(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  impl_->on_packet(ctx, nic, pkt);
}

void RdmaHost::on_event(pdes::LpContext& ctx, const pdes::Event& ev) {
  Impl& m = *impl_;
  switch (ev.kind) {
    case kEvWqeReady:
      m.activate(ctx, m.eps[m.local_ep[ev.aux]]);
      break;
    case kEvNicWake: {
      const std::uint32_t s = m.server_of_slot[ctx.slot()];
      NicState& n = m.servers[s].nics[ev.aux];
      if (ctx.now() != n.wake_at) break;  // superseded by an earlier wake
      n.wake_at = SimTime::never();
      m.fabric->wake(ctx, ev.aux);
      break;
    }
    case kEvPace: {
      Endpoint& e = m.eps[m.local_ep[ev.aux]];
      if (ctx.now() != e.pace_at) break;
      e.pace_at = SimTime::never();
      if (m.has_more(e)) m.activate(ctx, e);
      break;
    }
    case kEvRto: {
      Endpoint& e = m.eps[m.local_ep[ev.aux]];
      if (ctx.now() != e.rto_at) break;
      m.on_rto(ctx, e);
      break;
    }
    case kEvCcTimer: {
      Endpoint& e = m.eps[m.local_ep[ev.aux]];
      if (ctx.now() != e.cc_at) break;
      e.cc_at = SimTime::never();
      m.catch_up_cc(ctx, e);
      m.arm_cc_timer(ctx, e);
      if (m.has_more(e)) m.activate(ctx, e);
      break;
    }
    case kEvCqe:
      m.on_cqe(ctx, m.eps[m.local_ep[ev.aux]], ev.payload_as<CqeMsg>());
      break;
    case kEvPcieFault: {
      // PCIe AER: the link retrains at a lower generation (same width); DMA slows from now on.
      NicState& n = m.servers[m.server_of_slot[ctx.slot()]].nics[ev.aux];
      n.pcie = degrade(n.pcie, ev.payload_as<PcieFaultMsg>().gen);
      ++n.stats.pcie_degrades;
      break;
    }
    case kEvAppTimer:
      if (app_ != nullptr) {
        VerbsOnServer v(*this, ctx);
        app_->on_timer(v, ev.aux);
      }
      break;
    default:
      fatal("rdma: unknown event kind " + std::to_string(ev.kind));
  }
}

void RdmaHost::fabric_wake(pdes::LpContext& ctx, std::uint32_t nic) {
  impl_->fabric->wake(ctx, nic);
}

void RdmaHost::notify_app(pdes::LpContext& ctx, std::uint32_t endpoint) {
  if (app_ == nullptr) return;
  VerbsOnServer v(*this, ctx);
  app_->on_cq(v, endpoint);
}

void RdmaHost::notify_in_network(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  if (app_ == nullptr) return;
  VerbsOnServer v(*this, ctx);
  app_->on_in_network(v, impl_->fabric->topology().port_id(ctx.self(), nic), pkt);
}

std::uint64_t RdmaHost::digest(pdes::LpId server) const {
  const Impl& m = *impl_;
  std::uint64_t h = 0;
  const std::uint32_t s = m.server_of_node[server];
  if (s != kNone) {
    for (std::uint32_t li : m.eps_of_server[s]) {
      const QpStats& q = m.eps[li].stats;
      for (std::uint64_t v : {q.messages, q.bytes, q.recv_messages, q.packets, q.retransmitted,
                              q.timeouts, q.naks_sent, q.naks_received, q.acks_sent, q.cnps_sent,
                              q.cnps_received, q.ecn_received, q.out_of_order, q.duplicates}) {
        h = hash_combine(h, v);
      }
      h = hash_combine(h, static_cast<std::uint64_t>(m.eps[li].state));
    }
    for (const NicState& n : m.servers[s].nics) {
      h = hash_combine(h, n.stats.ctx_misses * 31 + n.stats.mtt_misses);
    }
  }
  return h;
}

// --- Verbs ----------------------------------------------------------------------------------

SimTime VerbsOnServer::now() const {
  return ctx_.now();
}
topology::NodeId VerbsOnServer::server() const {
  return ctx_.self();
}

bool VerbsOnServer::post(std::uint32_t endpoint, const WorkRequest& wr) {
  return host_.impl_->post(ctx_, endpoint, wr);
}

std::size_t VerbsOnServer::poll_cq(std::uint32_t endpoint, std::span<Completion> out) {
  RdmaHost::Impl& m = *host_.impl_;
  STEPSIM_CHECK(endpoint < m.local_ep.size() && m.local_ep[endpoint] != kNone,
                "poll_cq on an endpoint not on this rank");
  Endpoint& e = m.eps[m.local_ep[endpoint]];
  std::size_t k = 0;
  while (k < out.size() && !e.cq.empty()) out[k++] = e.cq.pop();
  return k;
}

QpState VerbsOnServer::state(std::uint32_t endpoint) const {
  const RdmaHost::Impl& m = *host_.impl_;
  return m.eps[m.local_ep[endpoint]].state;
}

void VerbsOnServer::schedule(SimTime delay, std::uint32_t tag) {
  ctx_.send(ctx_.self(), delay, kEvAppTimer, tag);
}

void VerbsOnServer::send_in_network(topology::PortId nic, const fabric::Packet& pkt) {
  const topology::Topology& topo = host_.impl_->fabric->topology();
  STEPSIM_CHECK(nic < topo.ports.size() && topo.ports[nic].node == ctx_.self(),
                "send_in_network from a NIC port of another server");
  host_.impl_->send_in_network(ctx_, topo.ports[nic].index, pkt);
}

// --- results ----------------------------------------------------------------------------------

RdmaResults RdmaHost::collect(pdes::Sync& sync) const {
  const Impl& m = *impl_;
  const std::size_t ne = connections_.size() * 2;
  const std::size_t np = m.fabric->topology().ports.size();
  const std::size_t per_ep = QpStats::kFields + MessageTrace::kFields;
  std::vector<std::uint64_t> buf(ne * per_ep + np * NicStats::kFields, 0);
  for (const Endpoint& e : m.eps) {
    std::uint64_t* x = buf.data() + static_cast<std::size_t>(e.id) * per_ep;
    QpStats q = e.stats;
    q.state = static_cast<std::uint64_t>(e.state);
    q.error = static_cast<std::uint64_t>(e.error);
    static_assert(sizeof(QpStats) == QpStats::kFields * sizeof(std::uint64_t));
    std::memcpy(x, &q, sizeof(q));
    MessageTrace t = e.sent_trace;
    t.arrived_ps = e.recv_trace.arrived_ps;
    t.placed_ps = e.recv_trace.placed_ps;
    t.cqe_ps = e.recv_trace.cqe_ps;
    static_assert(sizeof(MessageTrace) == MessageTrace::kFields * sizeof(std::int64_t));
    std::memcpy(x + QpStats::kFields, &t, sizeof(t));
    // Absolute times are shifted by one so that "never" (-1) sums as 0 across ranks.
    for (std::size_t k = 7; k < MessageTrace::kFields; ++k) x[QpStats::kFields + k] += 1;
  }
  for (const ServerState& ss : m.servers) {
    const topology::Topology& topo = m.fabric->topology();
    for (std::uint32_t i = 0; i < ss.nics.size(); ++i) {
      const PortId gp = topo.nodes[ss.node].first_port + i;
      std::memcpy(buf.data() + ne * per_ep + static_cast<std::size_t>(gp) * NicStats::kFields,
                  &ss.nics[i].stats, sizeof(NicStats));
    }
  }
  sync.allreduce_sum(buf);
  RdmaResults out;
  out.endpoints.resize(ne);
  out.traces.resize(ne);
  out.nics.resize(np);
  for (std::size_t i = 0; i < ne; ++i) {
    std::uint64_t* x = buf.data() + i * per_ep;
    for (std::size_t k = 7; k < MessageTrace::kFields; ++k) x[QpStats::kFields + k] -= 1;
    std::memcpy(static_cast<void*>(&out.endpoints[i]), x, sizeof(QpStats));
    std::memcpy(static_cast<void*>(&out.traces[i]), x + QpStats::kFields, sizeof(MessageTrace));
  }
  for (std::size_t gp = 0; gp < np; ++gp) {
    std::memcpy(static_cast<void*>(&out.nics[gp]),
                buf.data() + ne * per_ep + gp * NicStats::kFields, sizeof(NicStats));
  }
  return out;
}

void configure_fabric(const NicParams& nic, fabric::FabricParams& fabric) {
  fabric.telemetry = nic.cc.algorithm == "hpcc";
  if (nic.cc.hpcc.base_rtt > SimTime::zero()) fabric.telemetry_rtt = nic.cc.hpcc.base_rtt;
}

bool transition_allowed(QpState from, QpState to) {
  if (to == QpState::kError) return true;
  if (to == QpState::kReset) return true;  // modify_qp to RESET is always allowed
  switch (from) {
    case QpState::kReset:
      return to == QpState::kInit;
    case QpState::kInit:
      return to == QpState::kInit || to == QpState::kRtr;
    case QpState::kRtr:
      return to == QpState::kRts;
    case QpState::kRts:
      return to == QpState::kRts;
    case QpState::kError:
      return false;
  }
  return false;
}

}  // namespace stepsim::nic
