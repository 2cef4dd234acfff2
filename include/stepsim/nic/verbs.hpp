#pragma once
/// A small verbs-like API inside the simulator: reliable connections (RC queue pairs) between NIC
/// ports, work requests (RDMA WRITE, WRITE with immediate, SEND, READ), completion queues, and the
/// application interface the NIC calls back (perftest now, the collective layer later).

#include <cstdint>
#include <span>
#include <string>

#include "stepsim/core/plain_words.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/pdes/event.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

enum class Opcode : std::uint8_t { kWrite, kWriteImm, kSend, kRead };
std::string opcode_name(Opcode op);

/// RC queue-pair states (IB spec): RESET -> INIT -> RTR -> RTS; any -> ERROR.
enum class QpState : std::uint8_t { kReset, kInit, kRtr, kRts, kError };
std::string qp_state_name(QpState s);

/// Why a QP went to ERROR (or kNone).
enum class QpError : std::uint8_t { kNone, kRetryExceeded, kCqOverflow };
std::string qp_error_name(QpError e);

/// Whether modify_qp may move a QP from `from` to `to` (IB spec, simplified: forward through
/// RESET, INIT, RTR, RTS; RTS to RTS; anything to ERROR or RESET; ERROR only to RESET).
bool transition_allowed(QpState from, QpState to);

enum class WcStatus : std::uint8_t { kSuccess, kRetryExceeded, kFlushed };

/// A reliable connection between two NIC ports (global port ids). Its two endpoints are numbered
/// 2 * connection + side (side 0 at `a`, 1 at `b`); each can post work requests to the other.
struct Connection {
  topology::PortId a = 0;
  topology::PortId b = 0;
  std::uint8_t prio = 3;      ///< traffic class (lossless under PFC by default)
  std::uint16_t entropy = 0;  ///< UDP source port
  std::uint32_t label = 0;    ///< IPv6 flow label
};

[[nodiscard]] inline std::uint32_t endpoint_of(std::uint32_t connection, int side) {
  return connection * 2 + static_cast<std::uint32_t>(side);
}
[[nodiscard]] inline std::uint32_t peer_endpoint(std::uint32_t endpoint) {
  return endpoint ^ 1u;
}

struct WorkRequest {
  Opcode opcode = Opcode::kWrite;
  std::int64_t bytes = 0;
  std::uint64_t wr_id = 0;
  bool signaled = true;   ///< generate a send completion
  std::uint32_t imm = 0;  ///< immediate data (WRITE with immediate, SEND): in the receive CQE
};

/// A completion queue entry.
struct Completion {
  std::uint64_t wr_id = 0;  ///< the work request's id (receive side: the message's sequence)
  std::uint32_t endpoint = 0;
  Opcode opcode = Opcode::kWrite;
  bool recv = false;  ///< a receive completion (SEND or WRITE with immediate arrived)
  WcStatus status = WcStatus::kSuccess;
  std::int64_t bytes = 0;
  SimTime posted;         ///< when the sender posted the work request
  SimTime done;           ///< when the CQE became visible
  std::uint32_t imm = 0;  ///< receive completions: the sender's immediate data
  // Per-message counters for flow records (issue 14). Send completions: when the message's first
  // packet left the NIC, its packets sent (with retransmissions) and those sent again. Receive
  // completions: its packets that arrived CE-marked (ECN).
  SimTime first_byte;
  std::uint32_t packets = 0;
  std::uint32_t retransmitted = 0;
  std::uint32_t ecn_marked = 0;
};

/// What a timer brings back to the application (RdmaApp::on_timer), carried by the timer's
/// event: a tag and 24 bytes of the application's own typed payload (data.as<View>(),
/// TimerData::of(view)), no table on the side.
using TimerData = PlainWords<6>;
struct AppTimer {
  /// For an application that hosts others (concurrent collectives, iterations): which one the
  /// timer is for. The hosting application sets it; a hosted one leaves it alone.
  std::uint32_t host = 0;
  std::uint32_t tag = 0;
  TimerData data = {};
};
static_assert(sizeof(AppTimer) <= pdes::kEventPayloadBytes, "a timer rides in one event");

/// What a NIC offers to the application running on the same server, during a callback.
class Verbs {
 public:
  virtual ~Verbs() = default;
  [[nodiscard]] virtual SimTime now() const = 0;
  [[nodiscard]] virtual topology::NodeId server() const = 0;
  /// Posts a work request on a local endpoint; false if the QP is not in RTS (ERROR).
  virtual bool post(std::uint32_t endpoint, const WorkRequest& wr) = 0;
  /// Takes up to out.size() completions from the endpoint's CQ; returns how many.
  virtual std::size_t poll_cq(std::uint32_t endpoint, std::span<Completion> out) = 0;
  [[nodiscard]] virtual QpState state(std::uint32_t endpoint) const = 0;
  /// Calls RdmaApp::on_timer(timer) on this server after `delay`.
  virtual void schedule(SimTime delay, const AppTimer& timer) = 0;
  /// A timer with only a tag.
  void schedule(SimTime delay, std::uint32_t tag) { schedule(delay, AppTimer{.tag = tag}); }
  /// Sends one in-network packet (SHARP: a contribution to an aggregation tree; `pkt` has
  /// Packet::in_network set) from this server's NIC port `nic`. It reads its payload over PCIe and
  /// leaves after the NIC's queued packets of other kinds have had their turn (round robin).
  virtual void send_in_network(topology::PortId nic, const fabric::Packet& pkt) = 0;
};

/// The application on the servers. One object serves every server of a rank, and servers run
/// on several threads: an implementation keeps its state per server and touches only the state
/// of verbs.server() in a callback.
class RdmaApp {
 public:
  virtual ~RdmaApp() = default;
  /// At time 0 on every server that has an endpoint.
  virtual void on_start(Verbs& verbs) = 0;
  /// The endpoint's CQ has new entries (like an armed CQ's event, or a busy poll that finds one).
  virtual void on_cq(Verbs& verbs, std::uint32_t endpoint) = 0;
  virtual void on_timer(Verbs& /*verbs*/, const AppTimer& /*timer*/) {}
  /// An in-network packet (an aggregation tree's result) arrived at NIC port `nic` and was
  /// written to memory.
  virtual void on_in_network(Verbs& /*verbs*/, topology::PortId /*nic*/,
                             const fabric::Packet& /*pkt*/) {}
};

}  // namespace stepsim::nic
