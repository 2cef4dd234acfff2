// PFC headroom after seed 004 (DOMAIN.md section 3), the Linux mlx5 driver (port_buffer.c) and,
// switch side, SONiC's dynamic buffer model (docs/fabric.md).
#include "stepsim/fabric/pfc_headroom.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/fabric/switch_headroom.hpp"

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

SwitchHeadroom switch_headroom(const SwitchHeadroomInputs& in) {
  SwitchHeadroom h;
  // Worst case: every packet is a minimum-size 64 B frame that takes a whole cell, or one byte
  // over a cell (two cells). SONiC's formula divides by the packet's bytes; the vendor's (mlxsw)
  // by its wire bytes, with the preamble and inter-packet gap (switch_headroom.hpp).
  constexpr double kMinPacket = 64;
  const auto cell = static_cast<double>(in.cell.count());
  if (in.cell_factor_model == CellFactorModel::kSonic) {
    h.cell_factor = cell > 2 * kMinPacket ? cell / kMinPacket : 2 * cell / (1 + cell);
  } else {
    constexpr double kGap = kWireOverheadBytes;  // preamble + SFD 8 B, inter-packet gap 12 B
    h.cell_factor = std::max(cell / (kMinPacket + kGap), 2 * cell / (cell + 1 + kGap));
  }
  const double p = in.small_packet_percent;
  h.cell_occupancy = (100 - p + p * h.cell_factor) / 100;
  const auto bytes_in = [&](SimTime t) {
    const Int128 bits = static_cast<Int128>(t.picoseconds()) * in.rate.bits_per_second();
    constexpr Int128 kBitsPerBytePs = static_cast<Int128>(8) * 1000'000'000'000LL;
    return Bytes(static_cast<std::int64_t>((bits + kBitsPerBytePs - 1) / kBitsPerBytePs));
  };
  h.on_cable = bytes_in(in.length.delay(in.per_metre));
  h.on_gearbox = bytes_in(in.gearbox);
  h.propagation = Bytes(in.mtu.count() + 2 * (h.on_cable.count() + h.on_gearbox.count()) +
                        in.mac_phy.count() + in.peer_response.count());
  h.xoff =
      Bytes(in.mtu.count() + static_cast<std::int64_t>(std::ceil(
                                 static_cast<double>(h.propagation.count()) * h.cell_occupancy)));
  // Ports of 400G and more (8 lanes on Spectrum) hold twice the pipeline and one MTU more.
  const bool fast = in.rate >= DataRate::gbps(400);
  h.xon = Bytes(in.pipeline.count() * (fast ? 2 : 1));
  h.speed_overhead = fast ? in.mtu : Bytes(0);
  h.per_pg = Bytes(h.xoff.count() + h.xon.count() + h.speed_overhead.count());
  h.per_port = Bytes(h.per_pg.count() * in.priorities);
  const std::int64_t pgs = std::int64_t{in.ports} * in.priorities;
  if (in.shared_ratio > 0) {
    // The xoff parts leave the PGs for one pool sized for 1/ratio of them at once.
    h.reserved = Bytes(pgs * (h.xon.count() + h.speed_overhead.count()));
    h.shared_pool = Bytes((pgs * h.xoff.count() + in.shared_ratio - 1) / in.shared_ratio);
  } else {
    h.reserved = Bytes(pgs * h.per_pg.count());
    h.shared_pool = Bytes(0);
  }
  h.total = Bytes(h.reserved.count() + h.shared_pool.count());
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
  // The model's own delays: the link's one-way latency both ways (an optical link's two DSPs,
  // transmit and receive module, are crossed each way: four in the round trip, where the
  // textbook formula's "+ 2 DSP" counts two and left a 1.6T port 250 ns = 50 KB short), and a
  // switch that counts a packet only after its pipeline (T_switch at least the pipeline).
  in.phy_latency = l.latency - l.length.delay(in.per_metre);
  in.switch_delay = std::max(p.pfc.switch_delay, p.sw.latency);
  in.nic_delay = p.pfc.nic_delay;
  in.dsp_modules = 0;                                      // in phy_latency
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
