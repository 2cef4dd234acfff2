#pragma once
/// Raw traffic for testing the fabric on its own (before the RDMA layer): flows of bytes from one
/// NIC to another, sent at a fixed rate (line rate by default), and the usual patterns.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// How a flow's packets get ECMP entropy (DOMAIN.md section 5).
enum class Entropy : std::uint8_t {
  kFixed,      ///< one UDP source port for every QP: all QPs of a host pair hash alike
  kUdpSport,   ///< a UDP source port per QP
  kFlowLabel,  ///< IPv6 flow label from CRC-32 over the QPs and addresses; fixed source port
};

struct Flow {
  std::uint32_t id = 0;
  topology::PortId src_nic = 0;
  topology::PortId dst_nic = 0;
  std::int64_t bytes = 0;
  SimTime start;
  DataRate rate;              ///< 0: as fast as the NIC port allows
  std::int64_t window = 0;    ///< >0: at most this many unacknowledged payload bytes
  std::uint32_t qp = 0;       ///< source QP number
  std::uint16_t entropy = 0;  ///< UDP source port
  std::uint32_t label = 0;    ///< IPv6 flow label (kFlowLabel)
  std::uint8_t prio = 3;      ///< traffic class
};

struct TrafficSpec {
  std::string pattern = "permutation";  ///< one of traffic_patterns()
  std::int64_t flow_bytes = 2'000'000;
  SimTime start = SimTime::zero();
  DataRate rate;              ///< 0 = line rate
  std::int64_t window = 0;    ///< >0: window-based flows (payload bytes in flight)
  std::uint32_t senders = 8;  ///< incast: senders into one receiver
  std::uint32_t qps = 1;      ///< pair: QPs (flows) between the two NICs
  double hot_fraction = 0.5;  ///< hotspot: share of flows aimed at the hot NIC
  Entropy entropy = Entropy::kUdpSport;
  std::uint8_t prio = 3;
  std::uint32_t seed = 1;
};

/// The patterns make_flows builds (TrafficSpec::pattern), in the order help texts list them.
const std::vector<std::string>& traffic_patterns();

/// Parses "fixed", "udp_sport", "flow_label".
Result<Entropy> parse_entropy(const std::string& name);

/// Builds the flows of a pattern. NICs are paired only within one rail (NIC index of the server),
/// since rails are separate planes; the same flows on every rank (seeded RNG, no rank input).
Result<std::vector<Flow>> make_flows(const topology::Topology& topo, const TrafficSpec& spec);

}  // namespace stepsim::fabric
