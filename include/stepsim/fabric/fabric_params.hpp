#pragma once
/// Parameters of the packet-level fabric: switches (buffer, forwarding), ECN, PFC, load
/// balancing, the physical layer's error model and scheduled faults.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stepsim/config/param_table.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

struct SwitchParams {
  Bytes buffer = Bytes(64LL << 20);    ///< shared packet buffer per switch
  double dt_alpha = 1.0;               ///< lossy dynamic threshold: queue < alpha x free buffer
  SimTime latency = SimTime::ns(300);  ///< forwarding pipeline latency
  bool cut_through = true;             ///< forward after the header (else after the tail)
};

/// RED/ECN marking on egress queues (DCQCN-style: probability rises from 0 at kmin to pmax at
/// kmax, 1 above).
struct EcnParams {
  bool enabled = true;
  Bytes kmin = Bytes(20'000);
  Bytes kmax = Bytes(60'000);
  double pmax = 0.2;
};

/// 802.1Qbb PFC on one lossless priority (DOMAIN.md section 3: ECN before PFC,
/// Kmin < Kmax < XON < XOFF; XOFF 150 KB, XON 75 KB in the seed's example).
struct PfcParams {
  bool enabled = true;
  std::uint8_t priority = 3;                ///< the lossless traffic class
  Bytes xoff = Bytes(150'000);              ///< ingress bytes that trigger PAUSE
  Bytes xon = Bytes(75'000);                ///< ingress bytes below which RESUME is sent
  Bytes headroom = Bytes(0);                ///< above XOFF; 0 = computed per port from its cable
  SimTime switch_delay = SimTime::ns(200);  ///< headroom formula's T_switch
  SimTime nic_delay = SimTime::ns(200);     ///< headroom formula's T_nic
};

/// A scheduled change to a link.
struct FaultSpec {
  enum class Kind { kDown, kUp, kLanes } kind = Kind::kDown;
  std::uint32_t link = 0;
  SimTime at;
  int lanes = 0;  ///< kLanes: lanes left
};

/// Largest cell (payload bytes) of cell fidelity.
inline constexpr std::int64_t kMaxCellBytes = 4LL << 20;

struct FabricParams {
  SwitchParams sw;
  EcnParams ecn;
  PfcParams pfc;
  LbParams lb;
  Bytes mtu = Bytes(4096);  ///< payload bytes per packet
  /// Cell fidelity when > 0: the NICs cut data into cells of this many payload bytes, each one
  /// frame through the fabric (cut-through, PFC, ECN, CC, LB as for packets) with the wire time of
  /// the MTU packets it stands for (wire_bytes). 0: packet fidelity.
  Bytes cell = Bytes(0);
  /// fabric.cell: the cell that cell fidelity uses (`cell` takes it: use_cells()). From the MTU
  /// up: a cell stands for whole MTU packets (their wire time), so none is smaller than one.
  Bytes cell_size = Bytes(64 << 10);
  /// Cell fidelity: the NICs cut data into cells of cell_size bytes.
  void use_cells() { cell = cell_size; }
  bool fec = true;           ///< KP4 FEC on every link (off: raw BER hits packets)
  int burst_symbols = 1;     ///< FEC error bursts (1 = independent bit errors)
  double ber_override = -1;  ///< >= 0: this pre-FEC BER on every link
  /// Non-empty: pre-FEC BER of each lane on every link (lane i of a port); overrides the BER.
  std::vector<double> lane_ber;
  /// INT for HPCC: switches stamp U = qlen / (rate x telemetry_rtt) + tx utilization into data
  /// packets that ask for it.
  bool telemetry = false;
  SimTime telemetry_rtt = SimTime::us(8);
  bool reroute = true;  ///< avoid down ports when another equal-cost port exists
  /// Packet trimming (Ultra Ethernet): a switch that would drop a data packet of a lossy class
  /// for want of buffer cuts it to its headers (kTrimmedFrameBytes) and sends that ahead of the
  /// port's data, so the receiver can NACK it at once.
  bool trimming = false;
  /// "minimal" (shortest paths) or "valiant" (dragonfly: via a random router of a third group,
  /// then minimal; Valiant & Brebner 1981, as in Kim et al. 2008).
  std::string routing = "minimal";
  std::vector<FaultSpec> faults;
  std::uint32_t seed = 1;

  /// Payload bytes per frame the NICs send: the cell at cell fidelity, else the MTU.
  [[nodiscard]] Bytes segment() const { return cell.count() > 0 ? cell : mtu; }
  /// Checks ranges; the error names the parameter and the allowed values.
  [[nodiscard]] Result<bool> validate() const;
};

/// The fabric's parameters as `fabric.*` keys (name, default, unit, range, meaning), bound to the
/// fields of `p`: one declaration for scenario YAML (`fabric:` section), `--set fabric.KEY=VALUE`
/// (stepsim run, bench fabric) and `stepsim list fabric`. Cross-key rules (Kmin < Kmax, XON <
/// XOFF) are FabricParams::validate's.
config::ParamTable fabric_param_table(FabricParams& p);

/// Adds down/up pairs for a link that flaps `times` times, each down for `down_for`, every
/// `period`, starting at `start`.
void add_flapping(std::vector<FaultSpec>& faults, std::uint32_t link, SimTime start, SimTime period,
                  SimTime down_for, int times);

}  // namespace stepsim::fabric

namespace stepsim::fabric {

/// Most down/up cycles one flap fault may give, and the latest time any fault may happen.
inline constexpr std::int64_t kMaxFlapCount = 1000'000;
inline constexpr SimTime kLatestFault = SimTime::s(1000'000);

/// Parses a fault from the command line into `faults`:
///   down:LINK@TIME, up:LINK@TIME, lanes:LINK@TIME=N, flap:LINK@START,PERIOD,DOWN,COUNT
/// (times with units, e.g. "down:17@20us", "flap:3@10us,20us,5us,4"). The error shows the forms.
/// Bounds: LINK one of the links (`lanes_of_link`: the lanes of each link's port), a lanes
/// fault leaving no more lanes than the port has, every time within kLatestFault (a flap's
/// START + PERIOD x COUNT + DOWN too), a flap's COUNT at most kMaxFlapCount.
Result<bool> parse_fault(const std::string& text, std::span<const int> lanes_of_link,
                         std::vector<FaultSpec>& faults);
/// parse_fault for the links of `topo`.
Result<bool> parse_fault(const std::string& text, const topology::Topology& topo,
                         std::vector<FaultSpec>& faults);

}  // namespace stepsim::fabric
