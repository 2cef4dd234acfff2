// The fabric's node: construction, per-rank setup and the event dispatch of every server and
// switch LP (see fabric_model.hpp). Each mechanism the events drive has its own file:
// forwarding.cpp (routing, load balancing), egress_port.cpp (buffer admission, ECN, queues,
// serialization, the pipe), pfc.cpp, raw_host.cpp, link_faults.cpp, fabric_stats.cpp.
// Modelling choices common to all of them:
// - A packet is one event per link traversal, delivered when its header (cut-through) or its
//   tail (store-and-forward) has crossed the link and the receiving switch's pipeline.
// - Cut-through never lets a packet's tail leave before it arrived; with equal link rates along
//   the path this is exact, with a slower ingress it is the tail constraint of the last hop only.
#include "stepsim/fabric/fabric_model.hpp"

#include <algorithm>

#include "src/fabric/egress_port.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/fabric/valiant_detour.hpp"

namespace stepsim::fabric {

using topology::kNone;
using topology::NodeId;
using topology::PortId;

namespace {
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
  if (params_.routing == "valiant") valiant_ = std::make_unique<ValiantDetour>(topo_, routing_);
  lanes_ = topo_.traits.global_links;
  schedule_faults();
}

FabricModel::~FabricModel() = default;

std::size_t FabricModel::port_state_bytes() {
  return sizeof(PortState) + sizeof(PortCold) + sizeof(std::int64_t);
}

std::size_t FabricModel::queued_packet_bytes() {
  return sizeof(QueueEntry);
}

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
    for (std::uint32_t i = 0; i < n.port_count; ++i) setup_port(n, i);
    base += n.port_count;
  }
  if (samples_ != nullptr) {
    std::vector<PortId> ids;
    std::vector<std::uint32_t> slots;
    ids.reserve(nports);
    slots.reserve(nports);
    for (std::uint32_t s = 0; s < local_.size(); ++s) {
      for (std::uint32_t i = 0; i < nodes_[s].port_count; ++i) {
        ids.push_back(nodes_[s].first_port + i);
        slots.push_back(s);
      }
    }
    samples_->setup(std::move(ids), std::move(slots), static_cast<std::uint32_t>(local_.size()));
  }
  if (host_ != nullptr) host_->setup(*this, local_);
  if (agent_ != nullptr) agent_->setup(*this, local_);
}

void FabricModel::setup_port(NodeState& n, std::uint32_t i) {
  const PortId gp = n.first_port + i;
  PortState& ps = port(n, i);
  PortCold& pc = cold(n, i);
  const topology::Port& tp = topo_.ports[gp];
  if (tp.link == kNone) {
    ps.down = true;
    return;
  }
  const topology::Link& link = topo_.links[tp.link];
  set_rate(ps, routing_.port(gp).rate);
  double ber = params_.ber_override >= 0 ? params_.ber_override : link.ber;
  if (!params_.lane_ber.empty()) {
    // The port's mean BER (what raw frames and corrected-codeword counts see); FEC failures use
    // the lanes exactly.
    double sum = 0;
    for (double b : params_.lane_ber) sum += b;
    ber = sum / static_cast<double>(params_.lane_ber.size());
  }
  ps.errors = ber > 0;
  pc.wire.reset(pdes::Rng(params_.seed, gp, kStreamFec), ber);
  ps.headroom = port_headroom(params_, topo_, tp.link).count();
}

std::int64_t FabricModel::headroom_of(PortId p) const {
  const NodeId v = topo_.ports[p].node;
  const std::uint32_t s = slot_of_node_[v];
  STEPSIM_CHECK(s != kNone, "headroom_of a port this rank does not own");
  return ports_[nodes_[s].port_base + topo_.ports[p].index].headroom;
}

void FabricModel::wake(pdes::LpContext& ctx, std::uint32_t nic) {
  kick(ctx, nodes_[ctx.slot()], nic);
}

DataRate FabricModel::nic_rate(pdes::LpContext& ctx, std::uint32_t nic) const {
  return ports_[nodes_[ctx.slot()].port_base + nic].rate;
}

void FabricModel::init_lp(pdes::LpContext& ctx) {
  if (host_ != nullptr && topo_.is_server(ctx.self())) host_->init_server(ctx);
  for (std::uint32_t f : flows_from_node_[ctx.self()]) {
    ctx.send(ctx.self(), flows_[f].start, kEvFlowStart, f);
  }
  init_faults(ctx);
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
      } else if (ev.payload_as<Packet>().in_network) [[unlikely]] {
        if (agent_ != nullptr) {
          agent_->on_packet(ctx, ev.aux, ev.payload_as<Packet>());
        } else {
          ++cold(n, ev.aux).stats.drops_unroutable;
          if (samples_ != nullptr) [[unlikely]]
            samples_->on_drop(n.port_base + ev.aux, ctx.now());
        }
      } else {
        on_packet(ctx, n, ev.aux, ev.payload_as<Packet>());
      }
      break;
    case kEvInNetworkEmit:
      enqueue(ctx, n, ev.aux & 0xffffu, ev.aux >> 16, ev.payload_as<Packet>(), ctx.now(),
              Classes{klass(ev.payload_as<Packet>()), klass(ev.payload_as<Packet>())});
      break;
    case kEvPortFree:
      port(n, ev.aux).free_pending = false;
      kick(ctx, n, ev.aux);
      break;
    case kEvPfc:
      on_pfc(ctx, n, ev.aux, ev.payload_as<PfcFrame>());
      break;
    case kEvFlowStart:
      start_flow(ctx, n, ev.aux);
      break;
    case kEvLinkFault:
      on_fault(ctx, n, ev.aux, ev.payload_as<LinkFault>());
      break;
    default:
      fatal("fabric: unknown event kind " + std::to_string(ev.kind));
  }
}

}  // namespace stepsim::fabric
