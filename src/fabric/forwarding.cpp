// Forwarding at a switch: the routing policy picks the destination edge switch (minimal, or a
// Valiant intermediate first: valiant_detour.hpp), the routing table gives the equal-cost ports,
// down ports are skipped (reroute), and the load-balancing policy (lb_*.cpp) picks one of them.
// In-network agents (SHARP) emit their own packets through emit_from_switch.
#include "src/fabric/egress_port.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/valiant_detour.hpp"

namespace stepsim::fabric {

void FabricModel::on_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, Packet pkt) {
  std::uint32_t out;
  std::uint32_t dst_edge = routing_.edge_index_of_nic(pkt.dst_nic);
  const int c = klass(pkt);
  Classes k{c, c};
  // A lossless packet comes in on the lane the upstream switch chose (hosts send on lane 0).
  if (lanes_ && c == 0) [[unlikely]]
    k.ingress = lossless_class(pkt.lane);
  if (valiant_) [[unlikely]] {
    if (pkt.via == n.edge_index) pkt.via = kNoDetour;  // detour done: minimal from here
    if (!routing_.port(n.first_port + in_port).peer_is_switch) {
      valiant_->choose(ctx.self(), pkt, n.route_rng);
    }
    if (pkt.via != kNoDetour) dst_edge = pkt.via;
  }
  if (lanes_ && c == 0) [[unlikely]] {
    pkt.lane = virtual_lane(topo_, routing_, pkt.via, ctx.self(), pkt.dst_nic);
    k.egress = lossless_class(pkt.lane);
  }
  if (pkt.via == kNoDetour && dst_edge == n.edge_index) {
    out = routing_.nic_port_at_edge(pkt.dst_nic);
  } else {
    std::span<const std::uint32_t> cand = routing_.candidates_at(n.switch_index, dst_edge);
    if (cand.empty()) {
      ++cold(n, in_port).stats.drops_unroutable;
      if (samples_ != nullptr) [[unlikely]]
        samples_->on_drop(n.port_base + in_port, ctx.now());
      return;
    }
    std::uint32_t usable[256];
    if (n.down_ports > 0 && params_.reroute) {
      std::uint32_t up = 0;
      for (std::uint32_t p : cand) {
        if (!port(n, p).down && up < 256) usable[up++] = p;
      }
      if (up == 0) {
        ++cold(n, cand[0]).stats.drops_link_down;
        if (samples_ != nullptr) [[unlikely]]
          samples_->on_drop(n.port_base + cand[0], ctx.now());
        return;
      }
      cand = std::span<const std::uint32_t>(usable, up);
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
  enqueue(ctx, n, out, in_port, pkt, tail, k);
}

void FabricModel::emit_from_switch(pdes::LpContext& ctx, std::uint32_t out, std::uint32_t in_port,
                                   const Packet& pkt, SimTime at) {
  NodeState& n = nodes_[ctx.slot()];
  STEPSIM_CHECK(!n.is_server && out < n.port_count && in_port < n.port_count && out < 0x10000 &&
                    in_port < 0x10000,
                "emit_from_switch: bad port");
  if (at <= ctx.now()) {
    enqueue(ctx, n, out, in_port, pkt, ctx.now(), Classes{klass(pkt), klass(pkt)});
  } else {
    ctx.send(ctx.self(), at - ctx.now(), kEvInNetworkEmit, out | in_port << 16, pkt);
  }
}

}  // namespace stepsim::fabric
