// The host adapter: RdmaHost is what the fabric calls at each server (fabric::HostModel), and
// VerbsOnServer what the application calls; both hand over to the RC transport
// (rc_transport.hpp), which holds the rank's queue pairs and NIC ports. This file also gathers
// the counters over ranks and computes the path RTT that HPCC's T defaults to.
#include "stepsim/nic/rdma_host.hpp"

#include "src/nic/rc_transport.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::nic {

using fabric::Packet;
using topology::kNone;
using topology::PortId;

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
  transport_ = std::make_unique<RcTransport>(*this, params_, fabric, local_lps, connections_);
  fabric_ = &fabric;
}

void RdmaHost::init_server(pdes::LpContext& ctx) {
  const topology::Topology& topo = fabric_->topology();
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
  return transport_->next_packet(ctx, nic, lossless_paused, out);
}

void RdmaHost::on_packet(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  transport_->on_packet(ctx, nic, pkt);
}

void RdmaHost::on_event(pdes::LpContext& ctx, const pdes::Event& ev) {
  if (ev.kind != kEvAppTimer) {
    transport_->on_event(ctx, ev);
  } else if (app_ != nullptr) {
    VerbsOnServer v(*this, ctx);
    app_->on_timer(v, ev.payload_as<AppTimer>());
  }
}

void RdmaHost::notify_app(pdes::LpContext& ctx, std::uint32_t endpoint) {
  if (app_ == nullptr) return;
  VerbsOnServer v(*this, ctx);
  app_->on_cq(v, endpoint);
}

void RdmaHost::notify_in_network(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) {
  if (app_ == nullptr) return;
  VerbsOnServer v(*this, ctx);
  app_->on_in_network(v, fabric_->topology().port_id(ctx.self(), nic), pkt);
}

std::uint64_t RdmaHost::digest(pdes::LpId server) const {
  const RcTransport& t = *transport_;
  std::uint64_t h = 0;
  const std::uint32_t s = t.server_of_node(server);
  if (s == kNone) return h;
  for (std::uint32_t li : t.qps_of_server(s)) {
    const QueuePair& qp = t.qps()[li];
    QpStats q = qp.stats;
    q.state = static_cast<std::uint64_t>(qp.state);
    h = stat::digest(h, q);
  }
  for (const NicPort& n : t.servers()[s].nics) {
    h = hash_combine(h, n.stats.ctx_misses * 31 + n.stats.mtt_misses);
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
  return host_.transport_->post(ctx_, endpoint, wr);
}

std::size_t VerbsOnServer::poll_cq(std::uint32_t endpoint, std::span<Completion> out) {
  return host_.transport_->poll_cq(endpoint, out);
}

QpState VerbsOnServer::state(std::uint32_t endpoint) const {
  return host_.transport_->state(endpoint);
}

void VerbsOnServer::schedule(SimTime delay, const AppTimer& timer) {
  ctx_.send(ctx_.self(), delay, kEvAppTimer, 0, timer);
}

void VerbsOnServer::send_in_network(topology::PortId nic, const fabric::Packet& pkt) {
  const topology::Topology& topo = host_.fabric_->topology();
  STEPSIM_CHECK(nic < topo.ports.size() && topo.ports[nic].node == ctx_.self(),
                "send_in_network from a NIC port of another server");
  host_.transport_->send_in_network(ctx_, topo.ports[nic].index, pkt);
}

// --- results ----------------------------------------------------------------------------------

RdmaResults RdmaHost::collect(pdes::Sync& sync) const {
  // Every rank fills its own servers' endpoints and NICs; the rest keep their defaults.
  const topology::Topology& topo = fabric_->topology();
  RdmaResults out;
  out.endpoints.resize(connections_.size() * 2);
  out.traces.resize(connections_.size() * 2);
  out.nics.resize(topo.ports.size());
  for (const QueuePair& e : transport_->qps()) {
    QpStats& q = out.endpoints[e.id];
    q = e.stats;
    q.state = static_cast<std::uint64_t>(e.state);
    q.error = static_cast<std::uint64_t>(e.error);
    MessageTrace& t = out.traces[e.id];
    t = e.sent_trace;
    t.arrived_ps = e.recv_trace.arrived_ps;
    t.placed_ps = e.recv_trace.placed_ps;
    t.cqe_ps = e.recv_trace.cqe_ps;
  }
  for (const ServerState& ss : transport_->servers()) {
    for (std::uint32_t i = 0; i < ss.nics.size(); ++i) {
      out.nics[topo.nodes[ss.node].first_port + i] = ss.nics[i].stats;
    }
  }
  stat::allreduce(sync, out.endpoints);
  stat::allreduce(sync, out.traces);
  stat::allreduce(sync, out.nics);
  return out;
}

void configure_fabric(const NicParams& nic, fabric::FabricParams& fabric) {
  // What the congestion control declared it needs from the switches (CcNeeds), not its name.
  auto needs = cc::congestion_control_needs(nic.cc);
  STEPSIM_CHECK(needs.ok(), needs.ok() ? std::string() : needs.error().message);
  fabric.telemetry = needs->int_telemetry;
  if (needs->int_telemetry && needs->telemetry_rtt > SimTime::zero()) {
    fabric.telemetry_rtt = needs->telemetry_rtt;
  }
}

}  // namespace stepsim::nic
