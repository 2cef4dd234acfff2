// PFC frames: sending PAUSE/RESUME from an ingress port, and an egress port stopping or
// restarting its lossless class when one arrives (see pfc.hpp).
#include "src/fabric/pfc.hpp"

namespace stepsim::fabric {

namespace {
constexpr std::uint32_t kPfcFrameBytes = 64;
}  // namespace

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

}  // namespace stepsim::fabric
