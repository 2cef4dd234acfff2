// PFC frames: sending PAUSE/RESUME from an ingress port, and an egress port stopping or
// restarting its lossless class when one arrives (see pfc.hpp).
#include "src/fabric/pfc.hpp"

namespace stepsim::fabric {

namespace {
constexpr std::uint32_t kPfcFrameBytes = 64;
}  // namespace

namespace {

// Lossless class <-> PFC priority: lane v of a dragonfly is the base priority + v (mod 8).
std::uint8_t priority_of(int c, std::uint8_t base) {
  const int lane = c == 0 ? 0 : c - 1;
  return static_cast<std::uint8_t>((base + lane) % 8);
}

int class_of(std::uint8_t prio, std::uint8_t base) {
  const int lane = (prio + 8 - base) % 8;
  return lane >= kVirtualLanes ? -1 : lossless_class(static_cast<std::uint8_t>(lane));
}

}  // namespace

void FabricModel::send_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, int c,
                           bool pause) {
  PortState& in = port(n, index);
  in.xoff_sent[c] = pause;
  PortStats& st = cold(n, index).stats;
  if (pause && st.pause_sent++ == 0) st.first_pause_ps = ctx.now().picoseconds();
  if (pause) st.last_pause_ps = ctx.now().picoseconds();
  if (pause && samples_ != nullptr) [[unlikely]]
    samples_->on_pause_sent(n.port_base + index, ctx.now());
  const PortInfo& pi = routing_.port(n.first_port + index);
  const SimTime delay =
      pi.latency + in.rate.serialization_time(Bytes(kPfcFrameBytes + kWireOverheadBytes));
  ctx.send(
      pi.peer_node, delay, kEvPfc, pi.peer_index,
      PfcFrame{priority_of(c, params_.pfc.priority), static_cast<std::uint8_t>(pause ? 1 : 0)});
}

void FabricModel::on_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t index,
                         const PfcFrame& f) {
  PortState& e = port(n, index);
  const int c = class_of(f.prio, params_.pfc.priority);
  if (c < 0) return;  // a priority the fabric does not use
  if (f.pause != 0) {
    if (!e.paused[c]) {
      e.paused[c] = true;
      cold(n, index).pause_start[c] = ctx.now();
      ++cold(n, index).stats.pause_received;
      if (samples_ != nullptr) [[unlikely]]
        samples_->on_paused(n.port_base + index, ctx.now(), true);
    }
  } else if (e.paused[c]) {
    e.paused[c] = false;
    PortCold& pc = cold(n, index);
    pc.stats.paused_ps += (ctx.now() - pc.pause_start[c]).picoseconds();
    if (samples_ != nullptr) [[unlikely]]
      samples_->on_paused(n.port_base + index, ctx.now(), false);
    kick(ctx, n, index);
  }
}

}  // namespace stepsim::fabric
