#pragma once
// 802.1Qbb priority flow control on the lossless class: per ingress port, the bytes the switch
// holds that came in through it. Above XOFF the switch sends a PAUSE frame back over the link,
// at or below XON a RESUME; the frame takes the link latency plus its own wire time to stop or
// restart the upstream egress (which finishes the frame on the wire). The headroom above XOFF
// absorbs what is in flight meanwhile (pfc_headroom.hpp); buffer_admission.hpp drops beyond it.
// On a dragonfly each lossless virtual lane is its own PFC priority (the base priority + lane),
// counted, paused and resumed on its own, as switches remap the traffic class per hop.

#include "src/fabric/egress_port.hpp"

namespace stepsim::fabric {

inline void FabricModel::check_xoff(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port,
                                    int c) {
  const PortState& in = port(n, in_port);
  if (params_.pfc.enabled && !in.xoff_sent[c] && in.ingress[c] > params_.pfc.xoff.count()) {
    send_pfc(ctx, n, in_port, c, true);
  }
}

inline void FabricModel::check_xon(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port,
                                   int c) {
  const PortState& in = port(n, in_port);
  if (in.xoff_sent[c] && in.ingress[c] <= params_.pfc.xon.count()) {
    send_pfc(ctx, n, in_port, c, false);
  }
}

}  // namespace stepsim::fabric
