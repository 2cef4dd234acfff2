// PFC headroom after seed 004 (DOMAIN.md section 3) and the Linux mlx5 driver (port_buffer.c).
#include "stepsim/fabric/pfc_headroom.hpp"

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

}  // namespace stepsim::fabric
