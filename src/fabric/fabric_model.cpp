// The packet-level fabric model (see fabric_model.hpp). Modelling choices:
// - A packet is one event per link traversal, delivered when its header (cut-through) or its
//   tail (store-and-forward) has crossed the link and the receiving switch's pipeline.
// - Cut-through never lets a packet's tail leave before it arrived; with equal link rates along
//   the path this is exact, with a slower ingress it is the tail constraint of the last hop only.
// - PFC: XOFF/XON frames per lossless class, sent when the bytes a switch holds from one ingress
//   port cross XOFF/XON; they take the link latency plus a 64 B frame time to stop or restart the
//   upstream egress. A lossless packet beyond XOFF + headroom is dropped (too little headroom).
// - Lossy packets are admitted while their egress backlog stays below alpha x free buffer.
// - FEC/BER: the sender draws, per packet, whether an uncorrectable codeword (or, FEC off, a bit
//   error) destroys it; the packet then never arrives. Corrected codewords are counted too.
#include "stepsim/fabric/fabric_model.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/phy/fec.hpp"

namespace stepsim::fabric {

using topology::kNone;
using topology::NodeId;
using topology::PortId;

namespace {
constexpr std::uint32_t kHeaderBytes = 64;  // what cut-through waits for
constexpr std::uint32_t kPfcFrameBytes = 64;
constexpr std::uint32_t kStreamEcn = 0x45434e;
constexpr std::uint32_t kStreamFec = 0x464543;
constexpr std::uint32_t kStreamRoute = 0x525445;
}  // namespace

FabricModel::FabricModel(const topology::Topology& topo, const Routing& routing,
                         std::vector<Flow> flows, FabricParams params)
    : topo_(topo), routing_(routing), flows_(std::move(flows)), params_(std::move(params)) {
  STEPSIM_CHECK(params_.validate().ok(), "invalid fabric parameters");
  flows_from_node_.resize(topo_.nodes.size());
  flows_to_node_.resize(topo_.nodes.size());
  for (const Flow& f : flows_) {
    STEPSIM_CHECK(f.src_nic < topo_.ports.size() && f.dst_nic < topo_.ports.size(),
                  "flow " + std::to_string(f.id) + " names a port that does not exist");
    flows_from_node_[topo_.ports[f.src_nic].node].push_back(f.id);
    flows_to_node_[topo_.ports[f.dst_nic].node].push_back(f.id);
    flow_hash_.push_back(tuple_hash(f.src_nic, f.dst_nic, f.entropy, f.label));
    ack_hash_.push_back(tuple_hash(f.dst_nic, f.src_nic, f.entropy, f.label));
  }
  valiant_ = params_.routing == "valiant";
  if (valiant_) {
    for (NodeId v = 0; v < topo_.nodes.size(); ++v) {
      if (topo_.is_server(v) || routing_.edge_index(v) == kNone) continue;
      const std::uint32_t g = topo_.nodes[v].group;
      if (routers_by_group_.size() <= g) routers_by_group_.resize(g + 1);
      routers_by_group_[g].push_back(v);
    }
  }
  faults_by_node_.resize(topo_.nodes.size());
  for (const FaultSpec& fs : params_.faults) {
    STEPSIM_CHECK(fs.link < topo_.links.size(), "fault on a link that does not exist");
    LinkFault lf;
    lf.link = fs.link;
    lf.up = fs.kind == FaultSpec::Kind::kUp ? 1 : 0;
    lf.lanes_left =
        fs.kind == FaultSpec::Kind::kLanes ? static_cast<std::uint8_t>(std::max(1, fs.lanes)) : 0;
    for (PortId p : {topo_.links[fs.link].a, topo_.links[fs.link].b}) {
      faults_by_node_[topo_.ports[p].node].push_back({fs.at, lf});
    }
  }
}

FabricModel::~FabricModel() = default;

void FabricModel::setup(std::span<const pdes::LpId> local_lps) {
  local_.assign(local_lps.begin(), local_lps.end());
  nodes_.clear();
  nodes_.resize(local_.size());
  ports_.clear();
  std::size_t nports = 0;
  for (pdes::LpId v : local_) nports += topo_.nodes[v].port_count;
  ports_.resize(nports);
  cold_.clear();
  cold_.resize(nports);
  backlog_.assign(nports, 0);
  slot_of_node_.assign(topo_.nodes.size(), kNone);
  send_.assign(flows_.size(), SendState{});
  recv_.assign(flows_.size(), FlowRecord{});
  std::uint32_t base = 0;
  for (std::uint32_t s = 0; s < local_.size(); ++s) {
    const NodeId v = local_[s];
    slot_of_node_[v] = s;
    NodeState& n = nodes_[s];
    n.port_base = base;
    n.first_port = topo_.nodes[v].first_port;
    n.switch_index = routing_.switch_index(v);
    n.edge_index = routing_.edge_index(v);
    n.port_count = topo_.nodes[v].port_count;
    n.is_server = topo_.is_server(v);
    n.ecn_rng = pdes::Rng(params_.seed, v, kStreamEcn);
    n.route_rng = pdes::Rng(params_.seed, v, kStreamRoute);
    if (!n.is_server) {
      auto lb = make_load_balancer(params_.lb, v);
      STEPSIM_CHECK(lb.ok(), lb.ok() ? std::string() : lb.error().message);
      n.lb = std::move(lb).value();
    }
    for (std::uint32_t i = 0; i < n.port_count; ++i) {
      const PortId gp = topo_.nodes[v].first_port + i;
      PortState& ps = ports_[base + i];
      PortCold& pc = cold_[base + i];
      const topology::Port& tp = topo_.ports[gp];
      if (tp.link == kNone) {
        ps.down = true;
        continue;
      }
      const topology::Link& link = topo_.links[tp.link];
      set_rate(ps, routing_.port(gp).rate);
      double& ber = pc.ber;
      ber = params_.ber_override >= 0 ? params_.ber_override : link.ber;
      if (!params_.lane_ber.empty()) {
        // The port's mean BER (what raw frames and corrected-codeword counts see); FEC failures
        // use the lanes exactly.
        double sum = 0;
        for (double b : params_.lane_ber) sum += b;
        ber = sum / static_cast<double>(params_.lane_ber.size());
      }
      ps.errors = ber > 0;
      pc.fec_rng = pdes::Rng(params_.seed, gp, kStreamFec);
      if (params_.pfc.headroom.count() > 0) {
        ps.headroom = params_.pfc.headroom.count();
      } else {
        HeadroomInputs in;
        in.rate = ps.rate;
        in.length = link.length;
        in.per_metre =
            link.cable == topology::CableKind::kDac ? topo_.phy.dac_per_metre : topo_.phy.per_metre;
        // The model's own delays: PHY/FEC on the cable both ways, and a switch that counts a packet
        // only after its pipeline (so T_switch is at least the pipeline latency).
        in.phy_latency = topo_.phy.phy_latency;
        in.switch_delay = std::max(params_.pfc.switch_delay, params_.sw.latency);
        in.nic_delay = params_.pfc.nic_delay;
        in.dsp_modules = link.cable == topology::CableKind::kOptics ? 2 : 0;
        in.dsp_delay = topo_.phy.dsp_latency;
        in.mtu = Bytes(params_.segment().count() + kRoceHeaderBytes);  // a whole cell in flight
        ps.headroom = pfc_headroom(in).headroom.count();
      }
    }
    base += n.port_count;
  }
  if (host_ != nullptr) host_->setup(*this, local_);
  if (agent_ != nullptr) agent_->setup(*this, local_);
}

std::int64_t FabricModel::headroom_of(PortId p) const {
  const NodeId v = topo_.ports[p].node;
  const std::uint32_t s = slot_of_node_[v];
  STEPSIM_CHECK(s != kNone, "headroom_of a port this rank does not own");
  return ports_[nodes_[s].port_base + topo_.ports[p].index].headroom;
}

void FabricModel::init_lp(pdes::LpContext& ctx) {
  if (host_ != nullptr && topo_.is_server(ctx.self())) host_->init_server(ctx);
  for (std::uint32_t f : flows_from_node_[ctx.self()]) {
    ctx.send(ctx.self(), flows_[f].start, kEvFlowStart, f);
  }
  for (const auto& [at, fault] : faults_by_node_[ctx.self()]) {
    const topology::Link& l = topo_.links[fault.link];
    const PortId p = topo_.ports[l.a].node == ctx.self() ? l.a : l.b;
    ctx.send(ctx.self(), at, kEvLinkFault, topo_.ports[p].index, fault);
  }
}

void FabricModel::handle(pdes::LpContext& ctx, const pdes::Event& ev) {
  NodeState& n = nodes_[ctx.slot()];
  if (ev.kind >= kHostEventBase) {
    host_->on_event(ctx, ev);
    return;
  }
  switch (ev.kind) {
    case kEvPacket:
      if (n.is_server) {
        if (host_ != nullptr) {
          host_->on_packet(ctx, ev.aux, ev.payload_as<Packet>());
        } else {
          on_host_packet(ctx, n, ev.aux, ev.payload_as<Packet>());
        }
      } else if ((ev.payload_as<Packet>().flags & kInNetwork) != 0) [[unlikely]] {
        if (agent_ != nullptr) {
          agent_->on_packet(ctx, ev.aux, ev.payload_as<Packet>());
        } else {
          ++cold(n, ev.aux).stats.drops_unroutable;
        }
      } else {
        on_packet(ctx, n, ev.aux, ev.payload_as<Packet>());
      }
      break;
    case kEvInNetworkEmit:
      enqueue(ctx, n, ev.aux & 0xffffu, ev.aux >> 16, ev.payload_as<Packet>(), ctx.now());
      break;
    case kEvPortFree:
      port(n, ev.aux).free_pending = false;
      kick(ctx, n, ev.aux);
      break;
    case kEvPfc:
      on_pfc(ctx, n, ev.aux, ev.payload_as<PfcFrame>());
      break;
    case kEvFlowStart: {
      const Flow& f = flows_[ev.aux];
      const std::uint32_t idx = topo_.ports[f.src_nic].index;
      cold(n, idx).active.push_back(ev.aux);
      kick(ctx, n, idx);
      break;
    }
    case kEvLinkFault:
      on_fault(ctx, n, ev.aux, ev.payload_as<LinkFault>());
      break;
    default:
      fatal("fabric: unknown event kind " + std::to_string(ev.kind));
  }
}

void FabricModel::on_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, Packet pkt) {
  std::uint32_t out;
  std::uint32_t dst_edge = routing_.edge_index_of_nic(pkt.dst_nic);
  if (valiant_) [[unlikely]] {
    if (pkt.via == ctx.self()) pkt.via = kNoDetour;  // detour done: minimal from here
    if (!routing_.port(n.first_port + in_port).peer_is_switch) choose_detour(ctx, n, pkt);
    if (pkt.via != kNoDetour) dst_edge = routing_.edge_index(pkt.via);
  }
  if (pkt.via == kNoDetour && dst_edge == n.edge_index) {
    out = routing_.nic_port_at_edge(pkt.dst_nic);
  } else {
    std::span<const std::uint32_t> cand = routing_.candidates_at(n.switch_index, dst_edge);
    if (cand.empty()) {
      ++cold(n, in_port).stats.drops_unroutable;
      return;
    }
    std::uint32_t usable[256];
    if (n.down_ports > 0 && params_.reroute) {
      std::uint32_t k = 0;
      for (std::uint32_t c : cand) {
        if (!port(n, c).down && k < 256) usable[k++] = c;
      }
      if (k == 0) {
        ++cold(n, cand[0]).stats.drops_link_down;
        return;
      }
      cand = std::span<const std::uint32_t>(usable, k);
    }
    out = cand.size() == 1
              ? cand[0]
              : cand[n.lb->choose(LbQuery{pkt, cand, ctx.now(), backlog_.data() + n.port_base})];
  }
  SimTime tail = ctx.now();
  if (params_.sw.cut_through) {
    PortState& in = port(n, in_port);
    tail += frame_time(in, pkt.bytes) - in.hdr_ser;
  }
  enqueue(ctx, n, out, in_port, pkt, tail);
}

void FabricModel::emit_from_switch(pdes::LpContext& ctx, std::uint32_t out, std::uint32_t in_port,
                                   const Packet& pkt, SimTime at) {
  NodeState& n = nodes_[ctx.slot()];
  STEPSIM_CHECK(!n.is_server && out < n.port_count && in_port < n.port_count && out < 0x10000 &&
                    in_port < 0x10000,
                "emit_from_switch: bad port");
  if (at <= ctx.now()) {
    enqueue(ctx, n, out, in_port, pkt, ctx.now());
  } else {
    ctx.send(ctx.self(), at - ctx.now(), kEvInNetworkEmit, out | in_port << 16, pkt);
  }
}

void FabricModel::choose_detour(pdes::LpContext& ctx, NodeState& n, Packet& pkt) {
  // At the source router: a random router of a group that is neither the source's nor the
  // destination's (none when only two groups exist).
  const std::uint32_t src_group = topo_.nodes[ctx.self()].group;
  const std::uint32_t dst_group = topo_.nodes[routing_.edge_of_nic(pkt.dst_nic)].group;
  const auto groups = static_cast<std::uint32_t>(routers_by_group_.size());
  if (src_group == dst_group || groups < 3) return;
  std::uint32_t g;
  do {
    g = n.route_rng.below(groups);
  } while (g == src_group || g == dst_group || routers_by_group_[g].empty());
  const auto& routers = routers_by_group_[g];
  pkt.via = routers[n.route_rng.below(static_cast<std::uint32_t>(routers.size()))];
}

void FabricModel::enqueue(pdes::LpContext& ctx, NodeState& n, std::uint32_t out,
                          std::uint32_t in_port, Packet pkt, SimTime tail) {
  PortState& e = port(n, out);
  PortState& in = port(n, in_port);
  const int c = klass(pkt);
  const std::int64_t b = pkt.bytes;
  if (e.down) {
    ++cold(n, out).stats.drops_link_down;
    return;
  }
  if (c == 0) {
    if (in.ingress[0] + b > params_.pfc.xoff.count() + in.headroom) {
      ++cold(n, in_port).stats.drops_buffer;  // headroom exhausted
      return;
    }
  } else {
    const std::int64_t free = params_.sw.buffer.count() - n.buffer_used;
    if (free < b ||
        static_cast<double>(e.queued[1] + b) > params_.sw.dt_alpha * static_cast<double>(free)) {
      ++cold(n, out).stats.drops_buffer;
      return;
    }
  }
  if (params_.ecn.enabled) {
    const std::int64_t q = e.queued[c];
    const std::int64_t kmin = params_.ecn.kmin.count();
    const std::int64_t kmax = params_.ecn.kmax.count();
    if (q > kmin) {
      double p = q >= kmax ? 1.0
                           : params_.ecn.pmax * static_cast<double>(q - kmin) /
                                 static_cast<double>(kmax - kmin);
      // A cell is marked when any of the packets it stands for would be (cell fidelity).
      const std::int64_t packets = packets_in_frame(b - kRoceHeaderBytes, params_.mtu.count());
      if (packets > 1 && p < 1.0) p = 1.0 - std::pow(1.0 - p, static_cast<double>(packets));
      if (p >= 1.0 || n.ecn_rng.uniform() < p) {
        pkt.flags |= kEcnCe;
        PortStats& st = cold(n, out).stats;
        if (st.ecn_marks++ == 0) st.first_mark_ps = ctx.now().picoseconds();
      }
    }
  }
  if ((pkt.flags & kTelemetry) != 0 && params_.telemetry) stamp_telemetry(n, out, pkt);
  push(n, e.queue[c], QueueEntry{pkt, tail, in_port, kNone});
  e.queued[c] += b;
  integrate_queue(e, backlog_[n.port_base + out], ctx.now());
  backlog_[n.port_base + out] += b;
  n.buffer_used += b;
  in.ingress[c] += b;
  e.max_queue = std::max(e.max_queue, backlog_[n.port_base + out]);
  if (c == 0 && params_.pfc.enabled && !in.xoff_sent && in.ingress[0] > params_.pfc.xoff.count()) {
    send_pfc(ctx, n, in_port, true);
  }
  kick(ctx, n, out);
}

void FabricModel::stamp_telemetry(NodeState& n, std::uint32_t out, Packet& pkt) {
  // HPCC's per-hop U_j = qlen_j / (B_j T) + txRate_j / B_j (Li et al. 2019, eq. 2). The sender of
  // the paper derives txRate from two INT records of a hop; here the switch keeps the estimate
  // itself (see transmit) and the packet carries only the largest U along its path.
  const PortState& e = port(n, out);
  const double bdp =
      static_cast<double>(e.rate.bits_per_second()) / 8.0 * params_.telemetry_rtt.seconds();
  const double u = static_cast<double>(backlog_[n.port_base + out]) / bdp + cold(n, out).tx_util;
  const double fixed = std::min(65535.0, u * kTelemetryOne);
  pkt.telemetry = std::max(pkt.telemetry, static_cast<std::uint16_t>(fixed));
}

void FabricModel::release(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, int c,
                          const QueueEntry& q) {
  const std::int64_t b = q.pkt.bytes;
  port(n, index).queued[c] -= b;
  integrate_queue(port(n, index), backlog_[n.port_base + index], ctx.now());
  backlog_[n.port_base + index] -= b;
  n.buffer_used -= b;
  PortState& in = port(n, q.in_port);
  in.ingress[c] -= b;
  if (c == 0 && in.xoff_sent && in.ingress[0] <= params_.pfc.xon.count()) {
    send_pfc(ctx, n, q.in_port, false);
  }
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
    int c = -1;
    if (!e.queue[0].empty() && !e.paused[0]) {
      c = 0;
    } else if (!e.queue[1].empty()) {
      c = 1;
    }
    if (c < 0) return;
    const QueueEntry q = pop(n, e.queue[c]);
    pkt = q.pkt;
    tail = q.tail;
    release(ctx, n, index, c, q);
  }
  transmit(ctx, n, index, pkt, tail);
  const bool more = (n.is_server && (host_ != nullptr || !cold(n, index).active.empty())) ||
                    !(e.queue[0].empty() && e.queue[1].empty());
  if (more && !e.free_pending) {
    e.free_pending = true;
    ctx.send(ctx.self(), e.busy_until - ctx.now(), kEvPortFree, index);
  }
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

double FabricModel::loss_probability(PortCold& ps, std::uint32_t frame) {
  if (ps.cached_frame != frame) {
    const Bytes size(frame);
    if (params_.fec) {
      const double pcw =
          params_.lane_ber.empty()
              ? phy::codeword_failure_probability_burst(phy::kKp4, ps.ber, params_.burst_symbols)
              : phy::codeword_failure_probability_lanes(phy::kKp4, params_.lane_ber);
      ps.cached_loss = phy::any_failure_probability(pcw, phy::codewords_spanned(phy::kKp4, size));
    } else {
      ps.cached_loss = phy::raw_frame_error_probability(ps.ber, size);
    }
    ps.cached_frame = frame;
  }
  return ps.cached_loss;
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
  if (params_.telemetry) [[unlikely]] {
    // Utilization over the last telemetry_rtt, decayed linearly: 1 when the port sends back to
    // back, the busy share of the window otherwise.
    PortCold& pc = cold(n, index);
    const double w = static_cast<double>(params_.telemetry_rtt.picoseconds());
    const double dt = static_cast<double>((now - pc.tx_last).picoseconds());
    const double busy = static_cast<double>(ser.picoseconds()) / w;
    pc.tx_util = dt >= w ? busy : pc.tx_util * (1.0 - dt / w) + busy;
    pc.tx_last = now;
  }
  if (e.errors) [[unlikely]] {
    PortCold& pc = cold(n, index);
    if (pc.fec_rng.uniform() < loss_probability(pc, pkt.bytes)) {
      ++pc.stats.drops_fec;
      ++pc.stats.fec_uncorrectable;
      return;
    }
    if (params_.fec) {
      const double corr = phy::codeword_corrected_probability(phy::kKp4, pc.ber);
      const std::int64_t cws = phy::codewords_spanned(phy::kKp4, Bytes(pkt.bytes));
      for (std::int64_t i = 0; i < cws; ++i)
        pc.stats.fec_corrected += pc.fec_rng.uniform() < corr ? 1 : 0;
    }
  }
  const bool to_switch = pi.peer_is_switch;
  const SimTime head = params_.sw.cut_through && to_switch ? now + e.hdr_ser : e.busy_until;
  const SimTime arrival = head + pi.latency + (to_switch ? params_.sw.latency : SimTime::zero());
  ctx.send(pi.peer_node, arrival - now, kEvPacket, pi.peer_index, pkt);
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
    if (klass(Packet{.prio = f.prio}) == 0 && e.paused[0]) continue;
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
    out.flow = fid;
    out.seq = s.next_seq++;
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
      out.flags |= kLastOfFlow;
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
  const Flow& f = flows_[pkt.flow];
  if ((pkt.flags & kAck) != 0) {
    // Back at the sender: the window opens by the acknowledged packet's payload.
    send_[pkt.flow].acked += payload_of(f, pkt.seq);
    kick(ctx, n, topo_.ports[f.src_nic].index);
    return;
  }
  if (f.window > 0) {
    Packet ack;
    ack.flow = pkt.flow;
    ack.seq = pkt.seq;
    ack.dst_nic = f.src_nic;
    ack.bytes = kAckFrameBytes;
    ack.prio = f.prio;
    ack.flags = kAck;
    ack.tuple_hash = ack_hash_[pkt.flow];
    push(n, port(n, in_port).queue[klass(ack)], QueueEntry{ack, ctx.now(), in_port, kNone});
    kick(ctx, n, in_port);
  }
  FlowRecord& r = recv_[pkt.flow];
  if (r.first_ps < 0) r.first_ps = ctx.now().picoseconds();
  r.bytes_received += static_cast<std::int64_t>(pkt.bytes) - kRoceHeaderBytes;
  if ((pkt.flags & kEcnCe) != 0) ++r.ecn_marked;
  if (r.bytes_received >= flows_[pkt.flow].bytes && r.end_ps < 0)
    r.end_ps = ctx.now().picoseconds();
}

void FabricModel::send_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, bool pause) {
  PortState& in = port(n, index);
  in.xoff_sent = pause;
  PortStats& st = cold(n, index).stats;
  if (pause && st.pause_sent++ == 0) st.first_pause_ps = ctx.now().picoseconds();
  if (pause) st.last_pause_ps = ctx.now().picoseconds();
  const PortInfo& pi = routing_.port(n.first_port + index);
  const SimTime delay =
      pi.latency + in.rate.serialization_time(Bytes(kPfcFrameBytes + kWireOverheadBytes));
  ctx.send(pi.peer_node, delay, kEvPfc, pi.peer_index,
           PfcFrame{params_.pfc.priority, static_cast<std::uint8_t>(pause ? 1 : 0)});
}

void FabricModel::on_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t index,
                         const PfcFrame& f) {
  PortState& e = port(n, index);
  if (f.pause != 0) {
    if (!e.paused[0]) {
      e.paused[0] = true;
      cold(n, index).pause_start[0] = ctx.now();
      ++cold(n, index).stats.pause_received;
    }
  } else if (e.paused[0]) {
    e.paused[0] = false;
    PortCold& pc = cold(n, index);
    pc.stats.paused_ps += (ctx.now() - pc.pause_start[0]).picoseconds();
    kick(ctx, n, index);
  }
}

void FabricModel::on_fault(pdes::LpContext& ctx, NodeState& n, std::uint32_t index,
                           const LinkFault& f) {
  PortState& e = port(n, index);
  if (f.lanes_left > 0) {
    const topology::Link& l = topo_.links[f.link];
    set_rate(e, topo_.port_types[l.port_type].with_lanes(f.lanes_left).data_rate());
    cold(n, index).cached_frame = 0;
    return;
  }
  if (f.up == 0) {
    if (e.down) return;
    e.down = true;
    ++n.down_ports;
    for (int c = 0; c < 2; ++c) {
      while (!e.queue[c].empty()) {
        const QueueEntry q = pop(n, e.queue[c]);
        ++cold(n, index).stats.drops_link_down;
        if (!n.is_server) release(ctx, n, index, c, q);  // a NIC's queued ACKs hold no buffer
      }
    }
  } else if (e.down) {
    e.down = false;
    --n.down_ports;
    kick(ctx, n, index);
  }
}

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
      const PortStats st = stats_of(n.port_base + i);
      std::uint64_t* x =
          buf.data() +
          static_cast<std::size_t>(topo_.nodes[local_[s]].first_port + i) * PortStats::kFields;
      const std::uint64_t v[PortStats::kFields] = {
          st.bytes,
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
  for (std::size_t p = 0; p < np; ++p) {
    const std::uint64_t* x = buf.data() + p * PortStats::kFields;
    PortStats& st = out.ports[p];
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
  }
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
    b += sizeof(PortState) + sizeof(PortCold) + sizeof(std::int64_t) +
         cold_[n.port_base + i].active.capacity() * sizeof(std::uint32_t);
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
