#pragma once
// The egress side of a port, htsim's "link = queue then pipe": a queue per traffic class
// (lossless, lossy) served by a serializer at the port's data rate (the queue), then the link's
// latency to the peer (the pipe, in FabricModel::transmit). The queue's entries live in a pool
// shared by the node's ports, like cells of a switch's shared buffer. The state of the other
// mechanisms of a port (PFC, wire errors, telemetry) sits beside it, split into what every packet
// touches (EgressPort, two cache lines) and the rest (PortCold).

#include <cstdint>
#include <memory>
#include <vector>

#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/fabric/telemetry.hpp"
#include "stepsim/fabric/valiant_detour.hpp"
#include "stepsim/fabric/wire_errors.hpp"

namespace stepsim::fabric {

// Traffic classes of a port: 0 the lossless class (lane 0), 1 the lossy class, 2.. the lossless
// virtual lanes 1..3 of a dragonfly (valiant_detour.hpp). Without lanes only 0 and 1 are used.
inline constexpr int kClasses = 1 + kVirtualLanes;
inline constexpr int kLossyClass = 1;
[[nodiscard]] inline int lossless_class(std::uint8_t lane) {
  return lane == 0 ? 0 : lane + 1;
}

struct FabricModel::QueueEntry {
  Packet pkt;
  SimTime tail;                // when the packet's last bit is in (cut-through)
  std::uint32_t in_port : 24;  // ingress port index (PFC accounting)
  std::uint32_t in_class : 8;  // the class it holds ingress bytes in
  std::uint32_t next;          // next entry of the same queue, kNone at the tail
};

// A FIFO threaded through the node's entry pool: freed entries are reused first, so the memory a
// switch touches stays small and warm.
struct FabricModel::Fifo {
  std::uint32_t head = topology::kNone;
  std::uint32_t tail = topology::kNone;
  [[nodiscard]] bool empty() const { return head == topology::kNone; }
};

// What every packet touches, kept small (two cache lines) so that a large fabric's ports stay in
// cache; the rest of a port's state is in PortCold.
struct alignas(64) FabricModel::PortState {
  std::int64_t queued[kClasses] = {};   // bytes waiting, by class
  std::int64_t ingress[kClasses] = {};  // bytes held in this node that came in here, by class
  SimTime busy_until;
  DataRate rate;
  std::int64_t headroom = 0;
  SimTime hdr_ser;    // serialization of the header cut-through waits for
  SimTime frame_ser;  // serialization of a frame of frame_bytes (+ overhead)
  std::uint32_t frame_bytes = 0;
  bool paused[kClasses] = {};
  bool xoff_sent[kClasses] = {};
  bool free_pending = false;
  bool down = false;
  bool errors = false;  // the link has a BER > 0: draw losses
  Fifo queue[kClasses];
  std::uint64_t packets = 0;  // PortStats::packets, bytes, max_queue, busy_ps live here
  std::uint64_t bytes = 0;
  std::int64_t max_queue = 0;
  SimTime busy;
  SimTime queue_since;        // last change of the backlog
  double queue_integral = 0;  // bytes x ps
};

struct FabricModel::PortCold {
  PortStats stats;  // all but packets, bytes, max_queue (see PortState)
  SimTime pause_start[kClasses];
  std::uint32_t active_rr = 0;        // hosts: round-robin position among active flows
  std::vector<std::uint32_t> active;  // hosts: flows sending through this NIC
  WireErrors wire;                    // FEC / BER losses of the link this port sends on
  TxUtilization tx;                   // INT: transmit utilization
};

struct FabricModel::NodeState {
  std::uint32_t port_base = 0;      // first local port
  topology::PortId first_port = 0;  // first global port
  std::uint32_t switch_index = 0;   // Routing's dense indices (switches)
  std::uint32_t edge_index = 0;
  std::uint32_t port_count = 0;
  std::int64_t buffer_used = 0;
  std::uint32_t down_ports = 0;
  bool is_server = false;
  pdes::Rng ecn_rng;
  pdes::Rng route_rng;  // Valiant: choice of the intermediate router
  std::unique_ptr<LoadBalancer> lb;
  std::vector<QueueEntry> pool;     // queued packets of all ports
  std::vector<std::uint32_t> free;  // free entries of the pool
};

inline FabricModel::PortState& FabricModel::port(const NodeState& n, std::uint32_t index) {
  return ports_[n.port_base + index];
}

inline FabricModel::PortCold& FabricModel::cold(const NodeState& n, std::uint32_t index) {
  return cold_[n.port_base + index];
}

inline void FabricModel::integrate_queue(PortState& e, std::int64_t backlog, SimTime now) {
  e.queue_integral +=
      static_cast<double>(backlog) * static_cast<double>((now - e.queue_since).picoseconds());
  e.queue_since = now;
}

}  // namespace stepsim::fabric
