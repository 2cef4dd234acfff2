#pragma once
/// A packet as it crosses the fabric: fits in one engine event (32-byte payload).

#include <cstdint>
#include <type_traits>

#include "stepsim/core/plain_words.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/pdes/event.hpp"

namespace stepsim::fabric {

/// Packet::telemetry is the most loaded hop's normalized utilization U (HPCC) in this fixed
/// point: U = telemetry / kTelemetryOne, saturating at 65535 (U < 8).
inline constexpr double kTelemetryOne = 8192.0;

/// RoCEv2 headers of a data packet on Ethernet: MAC 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 +
/// FCS 4. Preamble, SFD and inter-frame gap (20 B) cost wire time but are not frame bytes.
inline constexpr std::uint32_t kRoceHeaderBytes = 62;
inline constexpr std::uint32_t kWireOverheadBytes = 20;
inline constexpr std::uint16_t kRoceUdpPort = 4791;
/// Frame bytes of an acknowledgement (a minimum Ethernet frame).
inline constexpr std::uint32_t kAckFrameBytes = 64;
/// Frame bytes of a trimmed packet: its headers in a minimum Ethernet frame.
inline constexpr std::uint32_t kTrimmedFrameBytes = 64;

/// RDMA goodput of a port: MTU payloads in frames with RoCE headers, preamble and gap.
[[nodiscard]] inline DataRate rdma_goodput(DataRate line, Bytes mtu) {
  const auto payload = static_cast<double>(mtu.count());
  return DataRate::bps(
      static_cast<std::int64_t>(static_cast<double>(line.bits_per_second()) * payload /
                                (payload + kRoceHeaderBytes + kWireOverheadBytes)));
}

/// MTU packets a frame with `payload` bytes stands for: 1 for a packet (or an ACK), and
/// ceil(payload / mtu) for a cell at cell fidelity. Per-packet costs (wire overhead, ECN marking
/// chances, NIC stage work) are paid that many times.
[[nodiscard]] inline std::int64_t packets_in_frame(std::int64_t payload, std::int64_t mtu) {
  return payload <= mtu ? 1 : (payload + mtu - 1) / mtu;
}

/// Bytes a frame of `frame` bytes (headers included) takes on the wire: every packet it stands
/// for pays its RoCE headers, preamble and gap, so a cell's wire time is that of its packets.
[[nodiscard]] inline std::int64_t wire_bytes(std::uint32_t frame, std::int64_t mtu) {
  const std::int64_t packets = packets_in_frame(std::int64_t{frame} - kRoceHeaderBytes, mtu);
  return std::int64_t{frame} + (packets - 1) * kRoceHeaderBytes + packets * kWireOverheadBytes;
}

/// Packet::via when the packet is not (or no longer) on a Valiant detour.
inline constexpr std::uint16_t kNoDetour = 0xffff;

/// The transport's own header: 16 bytes the fabric carries along and never reads. Each transport
/// reads and writes it through its own typed view (PlainWords::as / of): the RDMA NIC's RcHeader,
/// the SHARP agent's SharpHeader, the raw host's RawHeader.
using TransportHeader = PlainWords<4>;

/// A packet as the fabric sees it: the routing fields switches read and write, then the
/// transport header they carry untouched.
struct Packet {
  std::uint32_t dst_nic = 0;  ///< global port id of the receiving NIC
  /// CRC-32 of the packet's 5-tuple and IPv6 flow label (tuple_hash()), computed once per flow:
  /// every switch hashes the same header fields, so it is the flow's ECMP entropy.
  std::uint32_t tuple_hash = 0;
  std::uint32_t bytes : 23 = 0;  ///< frame bytes (payload + headers), < 8 MiB
  /// A switch cut the packet to its headers instead of dropping it (fabric.trimming): the
  /// receiver learns of the loss at once (packet trimming of Ultra Ethernet).
  std::uint32_t trimmed : 1 = 0;
  std::uint32_t prio : 3 = 0;         ///< traffic class 0..7
  std::uint32_t ecn_ce : 1 = 0;       ///< ECN congestion experienced (marked by a switch)
  std::uint32_t int_request : 1 = 0;  ///< switches stamp INT (HPCC) into `telemetry`
  /// An in-network packet: a switch hands it to its in-network agent (SHARP) instead of routing
  /// it on dst_nic, a NIC to the in-network client of its host.
  std::uint32_t in_network : 1 = 0;
  /// The lossless virtual lane it left the last switch on (dragonfly; 0 from a host).
  std::uint32_t lane : 2 = 0;
  std::uint16_t via = kNoDetour;   ///< Valiant routing: edge-switch index still to reach
  std::uint16_t telemetry = 0;     ///< INT: max hop utilization (kTelemetryOne fixed point)
  TransportHeader transport = {};  ///< the transport's header, opaque to the fabric
};
static_assert(sizeof(Packet) <= pdes::kEventPayloadBytes, "a packet rides in one event");
static_assert(std::is_trivially_copyable_v<Packet>, "a packet is plain data");

/// Event kinds of the fabric model (pdes::Event::kind).
enum FabricEvent : std::uint32_t {
  kEvPacket = 1,     ///< a packet arrives at port `aux` of the destination node
  kEvPortFree = 2,   ///< self: the egress port `aux` finished sending
  kEvPfc = 3,        ///< a PFC frame arrives at port `aux` (payload PfcFrame)
  kEvFlowStart = 4,  ///< self: a flow starts at its source (aux = local flow index)
  kEvLinkFault = 5,  ///< self: a fault on port `aux` (payload LinkFault)
  /// self: the in-network agent's packet (payload) joins egress port aux & 0xffff, charged to
  /// ingress port aux >> 16
  kEvInNetworkEmit = 6,
};

/// An 802.1Qbb PFC frame for one priority: XOFF (pause) or XON (resume).
struct PfcFrame {
  std::uint8_t prio = 0;
  std::uint8_t pause = 0;
};

/// A scheduled change of a link (both ends receive it).
struct LinkFault {
  std::uint32_t link = 0;
  std::uint8_t up = 0;          ///< 1: link comes back
  std::uint8_t lanes_left = 0;  ///< >0: lane loss, the link runs on this many lanes
};

}  // namespace stepsim::fabric
