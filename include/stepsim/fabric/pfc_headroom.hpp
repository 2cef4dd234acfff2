#pragma once
/// PFC headroom: the buffer a lossless ingress queue needs above XOFF to absorb what is still in
/// flight after it sends PAUSE (DOMAIN.md section 3), and the mlx5 driver's formula beside it.

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// What the headroom of one port and priority depends on.
struct HeadroomInputs {
  DataRate rate = DataRate::gbps(400);      ///< port data rate
  Length length = Length::m(3);             ///< cable length
  SimTime per_metre = SimTime::ns(5);       ///< propagation delay per metre
  SimTime switch_delay = SimTime::ns(200);  ///< PAUSE generation in the switch (200-350 ns)
  SimTime nic_delay = SimTime::ns(200);     ///< reaction of the sender (150-250 ns)
  SimTime phy_latency = SimTime::zero();    ///< SerDes/FEC latency per direction (not in the table)
  int dsp_modules = 0;                   ///< optical modules with a DSP on the path (2 for optics)
  SimTime dsp_delay = SimTime::ns(125);  ///< latency of one DSP module (100-150 ns)
  Bytes mtu = Bytes(4096);
  Bytes cell = Bytes(256);  ///< switch buffer cell (256 or 384 B)
};

struct Headroom {
  SimTime round_trip;  ///< 2 (D t_prop + PHY) + T_switch + T_nic (+ DSP modules)
  Bytes in_flight;     ///< round_trip x rate, rounded up to a byte
  Bytes headroom;      ///< in_flight + 2 MTU + one cell
};

/// DOMAIN.md's formula: Headroom = (2 D t_prop + T_switch + T_nic) B + 2 MTU + cell margin.
Headroom pfc_headroom(const HeadroomInputs& in);

/// The NVIDIA mlx5 driver's xoff threshold in C integer arithmetic (validation/fabric.md C1):
/// (301 + 216 * cable_m / 100) * speed_Gbps + 272 * MTU / 100 bytes.
Bytes mlx5_headroom(std::int64_t speed_gbps, std::int64_t cable_m, std::int64_t mtu_bytes);

/// The PFC headroom of the ports at either end of `link` in a fabric with parameters `p`:
/// pfc.headroom when set, else DOMAIN.md's formula with the cable's length and kind, the model's
/// PHY latency, T_switch at least the switch pipeline, and a whole segment (cell) in flight.
Bytes port_headroom(const FabricParams& p, const topology::Topology& topo, topology::LinkId link);

/// With PFC on, every switch's shared buffer must hold one ingress port's XOFF + headroom, or
/// the buffer could not bound a lossless queue; the error names fabric.buffer and the smallest
/// buffer that fits (the largest XOFF + headroom of the topology's switch ports).
Result<bool> check_switch_buffer(const FabricParams& p, const topology::Topology& topo);

}  // namespace stepsim::fabric
