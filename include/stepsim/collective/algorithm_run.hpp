#pragma once
// The runtime of one collective algorithm on the GPUs (one per CollectiveApp), and the typed
// payload its timers carry.

#include <cstdint>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::collective {

class CollectiveCore;

/// What a collective's timer carries back to its handler: plain data, every field full width.
struct TimerPayload {
  std::uint32_t event = 0;    ///< the algorithm's own event kind
  std::uint32_t index = 0;    ///< a lane, flow, tree node or GPU (communicator rank)
  std::uint32_t edge = 0;     ///< tree: the node's edge (0..2 children, 3 parent)
  std::uint32_t channel = 0;  ///< NVLS: the channel
  std::int64_t piece = 0;     ///< NVLS: the piece of the channel's shard
  friend bool operator==(const TimerPayload&, const TimerPayload&) = default;
};
/// The tag of the timer that starts the collective after the protocol's base latency, on every
/// server (members or not); it carries no payload.
inline constexpr std::uint32_t kStartTag = 0xffffffffu;
/// The tag of a timer whose nic::AppTimer::data is a TimerPayload.
inline constexpr std::uint32_t kPayloadTag = 0;

/// One algorithm's moves: its state, and its reactions to the NIC's and its timers' callbacks.
/// Shared machinery (NVLink timelines, counters, connections, timers) is in CollectiveCore.
class AlgorithmRun {
 public:
  explicit AlgorithmRun(CollectiveCore& core) : core_(core) {}
  virtual ~AlgorithmRun() = default;
  AlgorithmRun(const AlgorithmRun&) = delete;
  AlgorithmRun& operator=(const AlgorithmRun&) = delete;
  /// After the base latency, on every server of the communicator.
  virtual void start(nic::Verbs& v) = 0;
  /// One of its timers fired.
  virtual void on_timer(nic::Verbs& v, const TimerPayload& t) = 0;
  /// A successful completion on one of its endpoints.
  virtual void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c);
  /// An in-network packet (SHARP's result) arrived at NIC port `nic`.
  virtual void on_in_network(nic::Verbs& v, topology::PortId nic, const fabric::Packet& pkt);

 protected:
  CollectiveCore& core_;
};

}  // namespace stepsim::collective
