#pragma once
// What the RC transport puts in the fabric's packets and in its own events: its view of the
// packet's transport header (RcHeader: opcode, flags, PSN), the host event kinds (from
// fabric::kHostEventBase up) and their payloads.

#include <cstdint>

#include "stepsim/fabric/host_model.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/event.hpp"

namespace stepsim::nic {

/// Transport opcodes (RcHeader::op).
enum RcOp : std::uint8_t {
  kOpWrite = 1,
  kOpWriteImm = 2,
  kOpSend = 3,
  kOpReadReq = 4,
  kOpReadResp = 5,
  kOpAck = 6,
  kOpNak = 7,
  kOpCnp = 8,
  kOpTrimNack = 9,  ///< a switch trimmed data packet `psn`: send it again now (fabric.trimming)
};

/// RcHeader::flags.
enum RcFlag : std::uint8_t {
  kLastPacket = 1,      ///< the last packet of a message, of a READ's responses, or a READ request
  kFirstOfMessage = 2,  ///< the first packet of a message
  kAckRequest = 4,      ///< BTH AckReq: the receiver acknowledges this packet at once
  kEcnEcho = 8,         ///< ACK (CcNeeds::ack_echo): the packet it answers arrived CE-marked
};

/// The RC transport's view of fabric::Packet::transport: the BTH fields the model uses.
struct RcHeader {
  std::uint32_t qp = 0;   ///< the requester's endpoint (a CNP: the endpoint to slow down)
  std::uint32_t psn = 0;  ///< packet sequence number (ACK, NAK: the PSN the responder expects)
  /// READ request: the bytes still to read; a message's last packet: its immediate data; an
  /// ACK with CcNeeds::ack_echo: the PSN of the data packet that asked for it.
  std::uint32_t arg = 0;
  std::uint8_t op = 0;         ///< RcOp
  std::uint8_t flags = 0;      ///< RcFlag bits
  std::uint16_t int_echo = 0;  ///< ACK: the INT the acknowledged packet brought (HPCC)
};

/// The RC header of `pkt`.
[[nodiscard]] inline RcHeader rc_header(const fabric::Packet& pkt) {
  return pkt.transport.as<RcHeader>();
}

/// Host event kinds.
enum RcEvent : std::uint32_t {
  kEvWqeReady = fabric::kHostEventBase,  ///< aux: local endpoint; a WQE reached the NIC
  kEvNicWake,                            ///< aux: NIC port; the pipeline's head packet is ready
  kEvPace,                               ///< aux: local endpoint; its rate limiter allows a packet
  kEvRto,                                ///< aux: local endpoint
  kEvCcTimer,                            ///< aux: local endpoint
  kEvCqe,                                ///< aux: local endpoint; payload CqeMsg
  kEvAppTimer,                           ///< payload AppTimer
  kEvPcieFault,                          ///< aux: NIC port; payload PcieFaultMsg
};

inline constexpr std::uint32_t kReadReqHeader = 16;  ///< RETH
inline constexpr std::uint32_t kNoPsn = 0xffffffffu;

/// A completion on its way to the CQ (it becomes visible a PCIe write later): the slot where
/// the endpoint's CompletionQueue keeps it meanwhile.
struct CqeMsg {
  std::uint32_t slot;
};
static_assert(sizeof(CqeMsg) <= pdes::kEventPayloadBytes);

struct PcieFaultMsg {
  std::int32_t gen;
};

/// The verbs opcode a transport opcode belongs to.
[[nodiscard]] inline Opcode opcode_of(std::uint8_t op) {
  switch (op) {
    case kOpWriteImm:
      return Opcode::kWriteImm;
    case kOpSend:
      return Opcode::kSend;
    case kOpReadReq:
    case kOpReadResp:
      return Opcode::kRead;
    default:
      return Opcode::kWrite;
  }
}

/// The transport opcode of a work request's packets (a READ's request).
[[nodiscard]] inline std::uint8_t op_of(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
      return kOpWrite;
    case Opcode::kWriteImm:
      return kOpWriteImm;
    case Opcode::kSend:
      return kOpSend;
    case Opcode::kRead:
      return kOpReadReq;
  }
  return kOpWrite;
}

}  // namespace stepsim::nic
