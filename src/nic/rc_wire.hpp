#pragma once
// What the RC transport puts in the fabric's packets and in its own events: the transport opcodes
// (Packet::op), the host event kinds (from fabric::kHostEventBase up) and their payloads.

#include <cstdint>

#include "stepsim/fabric/host_model.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/event.hpp"

namespace stepsim::nic {

/// Transport opcodes (Packet::op).
enum RcOp : std::uint8_t {
  kOpWrite = 1,
  kOpWriteImm = 2,
  kOpSend = 3,
  kOpReadReq = 4,
  kOpReadResp = 5,
  kOpAck = 6,
  kOpNak = 7,
  kOpCnp = 8,
};

/// Host event kinds.
enum RcEvent : std::uint32_t {
  kEvWqeReady = fabric::kHostEventBase,  ///< aux: local endpoint; a WQE reached the NIC
  kEvNicWake,                            ///< aux: NIC port; the pipeline's head packet is ready
  kEvPace,                               ///< aux: local endpoint; its rate limiter allows a packet
  kEvRto,                                ///< aux: local endpoint
  kEvCcTimer,                            ///< aux: local endpoint
  kEvCqe,                                ///< aux: local endpoint; payload CqeMsg
  kEvAppTimer,                           ///< aux: the application's tag
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
