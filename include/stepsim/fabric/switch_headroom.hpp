#pragma once
/// PFC headroom as a switch vendor's calculator computes it (`stepsim headroom`, docs/fabric.md):
/// cell rounding of small packets, the pipeline (XON) reserve, per port and lossless priority,
/// and the switch-wide split with a shared headroom pool. Beside pfc_headroom.hpp's NIC-side
/// formula; the simulation itself does not use it.

#include "stepsim/core/units.hpp"

namespace stepsim::fabric {

/// What a switch vendor's headroom calculator takes: the SONiC dynamic buffer model (SONiC
/// "Dynamically Headroom Calculation" and "Shared headroom pool" HLDs; the Mellanox Spectrum
/// plug-in cfgmgr/buffer_headroom_mellanox.lua of sonic-swss). Byte-valued ASIC constants are
/// SONiC's ASIC_TABLE values for Spectrum (given there in KB of 1,024 B).
/// How the worst-case cell factor (buffer bytes per wire byte) is computed.
/// - kWire (default, the switch vendor's): a packet on the wire also takes its 20 B of preamble
///   and inter-packet gap, which the buffer does not store, and the worst packet is the one that
///   wastes most of its cells per wire byte: f = max(cell / (64 + 20), 2 cell / (cell + 1 + 20))
///   (a 64 B packet alone in a cell, or a packet one byte over a cell). For Spectrum's 96 B
///   cell this is the Linux mlxsw driver's "2 * cell_size / (IPG + cell_size + 1)"
///   (MLXSW_SP_CELL_FACTOR, drivers/net/ethernet/mellanox/mlxsw); 256 B: 3.05.
/// - kSonic: SONiC's buffer_headroom_mellanox.lua, wire bytes = packet bytes: cell / 64 above
///   128 B cells (256 B: 4), else 2 cell / (1 + cell).
enum class CellFactorModel { kWire, kSonic };

struct SwitchHeadroomInputs {
  DataRate rate = DataRate::gbps(400);
  Length length = Length::m(5);
  SimTime per_metre = SimTime::ps(5051);  ///< SONiC: light in the medium at 198,000 km/s
  Bytes mtu = Bytes(4096);                ///< lossless MTU
  Bytes cell = Bytes(144);                ///< buffer cell (Spectrum-1 96 B, Spectrum-2/3 144 B)
  int small_packet_percent = 100;         ///< share of minimum-size packets (SONiC default 100)
  CellFactorModel cell_factor_model = CellFactorModel::kWire;  ///< worst case with/without gap
  Bytes mac_phy = Bytes(819);                                  ///< MAC/PHY delay (0.8 KB)
  Bytes peer_response = Bytes(3891);  ///< the peer's PAUSE response time (3.8 KB)
  Bytes pipeline = Bytes(18432);      ///< switch pipeline latency = XON reserve (18 KB)
  SimTime gearbox = SimTime::zero();  ///< gearbox (retimer) latency each way, if any
  int priorities = 2;                 ///< lossless priorities (PGs) per port (SONiC: 3-4)
  int ports = 64;                     ///< switch ports that carry lossless traffic
  int shared_ratio = 0;  ///< shared headroom pool over-subscribe ratio; 0 = none (per-PG xoff)
};

struct SwitchHeadroom {
  double cell_factor = 1;     ///< worst-case buffer bytes per wire byte of a 64 B packet
  double cell_occupancy = 1;  ///< (100 - p + p x cell_factor) / 100
  Bytes on_cable;             ///< bytes on the cable one way (length x rate / light speed)
  Bytes on_gearbox;           ///< bytes in one gearbox
  Bytes propagation;          ///< MTU + 2 (cable + gearbox) + MAC/PHY + peer response
  Bytes xoff;                 ///< MTU + propagation x cell occupancy (rounded up)
  Bytes xon;                  ///< pipeline latency (doubled on ports of 400G and more)
  Bytes speed_overhead;       ///< one more MTU on ports of 400G and more
  Bytes per_pg;               ///< xoff + xon + speed overhead: one port and priority
  Bytes per_port;             ///< per_pg x priorities
  Bytes reserved;             ///< the switch's reserve: ports x priorities x (xon + overhead)
  Bytes shared_pool;          ///< shared headroom pool: all PGs' xoff / ratio (0 without one)
  Bytes total;                ///< reserved + shared pool, or ports x per_port without a pool
};

/// The switch-side headroom: cell rounding, pipeline (XON) reserve, per port and priority, and
/// the switch-wide pool split (SONiC dynamic buffer model; docs/fabric.md).
SwitchHeadroom switch_headroom(const SwitchHeadroomInputs& in);

}  // namespace stepsim::fabric
