// PFC headroom after seed 004 (DOMAIN.md section 3) and the Linux mlx5 driver (port_buffer.c).
#include "stepsim/fabric/pfc_headroom.hpp"

#include <algorithm>

#include "stepsim/fabric/packet.hpp"

namespace stepsim::fabric {

Headroom pfc_headroom(const HeadroomInputs& in) {
  Headroom h;
  h.round_trip = (in.length.delay(in.per_metre) + in.phy_latency) * 2 + in.switch_delay +
                 in.nic_delay + in.dsp_delay * in.dsp_modules;
  const Int128 bits = static_cast<Int128>(h.round_trip.picoseconds()) * in.rate.bits_per_second();
  constexpr Int128 kBitsPerBytePs = static_cast<Int128>(8) * 1000'000'000'000LL;
  h.in_flight = Bytes(static_cast<std::int64_t>((bits + kBitsPerBytePs - 1) / kBitsPerBytePs));
  h.headroom = h.in_flight + Bytes(2 * in.mtu.count()) + in.cell;
  return h;
}

Bytes mlx5_headroom(std::int64_t speed_gbps, std::int64_t cable_m, std::int64_t mtu_bytes) {
  return Bytes((301 + 216 * cable_m / 100) * speed_gbps + 272 * mtu_bytes / 100);
}

Bytes port_headroom(const FabricParams& p, const topology::Topology& topo, topology::LinkId link) {
  if (p.pfc.headroom.count() > 0) return p.pfc.headroom;
  const topology::Link& l = topo.links[link];
  HeadroomInputs in;
  in.rate = topo.link_rate(link);
  in.length = l.length;
  in.per_metre = l.cable == topology::CableKind::kDac ? topo.phy.dac_per_metre : topo.phy.per_metre;
  // The model's own delays: PHY/FEC on the cable both ways, and a switch that counts a packet only
  // after its pipeline (so T_switch is at least the pipeline latency).
  in.phy_latency = topo.phy.phy_latency;
  in.switch_delay = std::max(p.pfc.switch_delay, p.sw.latency);
  in.nic_delay = p.pfc.nic_delay;
  in.dsp_modules = l.cable == topology::CableKind::kOptics ? 2 : 0;
  in.dsp_delay = topo.phy.dsp_latency;
  in.mtu = Bytes(p.segment().count() + kRoceHeaderBytes);  // a whole cell in flight
  return pfc_headroom(in).headroom;
}

Result<bool> check_switch_buffer(const FabricParams& p, const topology::Topology& topo) {
  if (!p.pfc.enabled) return true;
  Bytes need(0);
  for (topology::LinkId l = 0; l < topo.links.size(); ++l) {
    const topology::Link& link = topo.links[l];
    const bool switch_end =
        !topo.is_server(topo.ports[link.a].node) || !topo.is_server(topo.ports[link.b].node);
    if (switch_end) need = std::max(need, p.pfc.xoff + port_headroom(p, topo, l));
  }
  if (p.sw.buffer < need) {
    return Error{"fabric.buffer (--buffer): " + to_string(p.sw.buffer) +
                 " is smaller than PFC XOFF + headroom of one switch port (" + to_string(need) +
                 " on " + topo.name + "); give at least " + std::to_string(need.count()) +
                 " bytes, or turn PFC off (fabric.pfc=false, --no-pfc)"};
  }
  return true;
}

}  // namespace stepsim::fabric
