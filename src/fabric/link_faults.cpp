// Scheduled link faults (FaultSpec, --fault): a link goes down (both ends drop what they queued
// for it and, with reroute, forwarding avoids it), comes back up, or loses lanes and runs at the
// rate of the lanes left. Both ends of the link get the event at the same simulated time.
#include <algorithm>

#include "src/fabric/egress_port.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::fabric {

using topology::PortId;

void FabricModel::schedule_faults() {
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

void FabricModel::init_faults(pdes::LpContext& ctx) {
  for (const auto& [at, fault] : faults_by_node_[ctx.self()]) {
    const topology::Link& l = topo_.links[fault.link];
    const PortId p = topo_.ports[l.a].node == ctx.self() ? l.a : l.b;
    ctx.send(ctx.self(), at, kEvLinkFault, topo_.ports[p].index, fault);
  }
}

void FabricModel::on_fault(pdes::LpContext& ctx, NodeState& n, std::uint32_t index,
                           const LinkFault& f) {
  PortState& e = port(n, index);
  if (f.lanes_left > 0) {
    const topology::Link& l = topo_.links[f.link];
    set_rate(e, topo_.port_types[l.port_type].with_lanes(f.lanes_left).data_rate());
    cold(n, index).wire.invalidate();
    return;
  }
  if (f.up == 0) {
    if (e.down) return;
    e.down = true;
    ++n.down_ports;
    for (int c = 0; c < kClasses; ++c) {
      while (!e.queue[c].empty()) {
        const QueueEntry q = pop(n, e.queue[c]);
        ++cold(n, index).stats.drops_link_down;
        if (samples_ != nullptr) [[unlikely]]
          samples_->on_drop(n.port_base + index, ctx.now());
        if (!n.is_server) release(ctx, n, index, c, q);  // a NIC's queued ACKs hold no buffer
      }
    }
    if (samples_ != nullptr) [[unlikely]]
      samples_->on_backlog(n.port_base + index, ctx.now(), backlog_[n.port_base + index]);
  } else if (e.down) {
    e.down = false;
    --n.down_ports;
    kick(ctx, n, index);
  }
}

}  // namespace stepsim::fabric
