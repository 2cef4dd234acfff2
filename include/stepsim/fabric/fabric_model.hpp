#pragma once
/// The packet-level fabric as an engine model: every server and switch of a topology is an LP.
/// This class is the node (the LP's event dispatch and state); each mechanism is in its own file
/// of src/fabric/ (docs/fabric.md, "Where each mechanism lives"): egress_port (queues,
/// serialization, the pipe), wire_errors (FEC/BER), buffer_admission (shared buffer, dynamic
/// threshold), ecn_marker, pfc, telemetry (INT), forwarding and valiant_detour (routing, load
/// balancing), raw_host (raw flows), link_faults, fabric_stats (counters, digest, collect).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stepsim/core/stat_table.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/host_model.hpp"
#include "stepsim/fabric/in_network.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/fabric/traffic.hpp"
#include "stepsim/pdes/model.hpp"
#include "stepsim/pdes/rng.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

class FabricSamples;
class ValiantDetour;

/// Counters of one port's egress direction (one direction of a link), plus the PAUSE frames its
/// ingress side sent. These feed the HDF5 /links table.
struct PortStats {
  std::uint64_t bytes = 0;              ///< frame bytes sent
  std::uint64_t packets = 0;            ///< packets sent (packet-hops)
  std::uint64_t ecn_marks = 0;          ///< packets marked CE at this egress queue
  std::uint64_t pause_sent = 0;         ///< XOFF frames sent upstream by this port's ingress
  std::uint64_t pause_received = 0;     ///< XOFF frames that stopped this egress
  std::uint64_t drops_buffer = 0;       ///< dropped: no buffer / headroom exceeded
  std::uint64_t drops_fec = 0;          ///< lost on the wire: uncorrectable FEC codeword or raw BER
  std::uint64_t drops_link_down = 0;    ///< dropped because the link was down
  std::uint64_t drops_unroutable = 0;   ///< dropped at this node: no usable port to the destination
  std::uint64_t fec_corrected = 0;      ///< codewords with errors that FEC corrected
  std::uint64_t fec_uncorrectable = 0;  ///< codewords FEC could not correct
  std::int64_t paused_ps = 0;           ///< time this egress was paused (lossless class)
  std::int64_t max_queue = 0;           ///< largest egress backlog in bytes
  std::int64_t first_mark_ps = -1;      ///< first ECN mark at this egress (-1: none)
  std::int64_t first_pause_ps = -1;     ///< first XOFF sent by this port's ingress (-1: none)
  std::uint64_t queue_byte_ns = 0;      ///< egress backlog integrated over time (bytes x ns)
  std::int64_t busy_ps = 0;             ///< time spent serializing frames
  std::int64_t last_pause_ps = -1;      ///< last XOFF sent by this port's ingress (-1: none)
  std::uint64_t trimmed = 0;            ///< packets cut to their headers here (fabric.trimming)
  /// Every packet this port lost, whatever the cause.
  [[nodiscard]] std::uint64_t drops() const {
    return drops_buffer + drops_fec + drops_link_down + drops_unroutable;
  }
  /// Whether the port did anything: sent, paused its upstream or lost a packet.
  [[nodiscard]] bool used() const { return packets > 0 || pause_sent > 0 || drops() > 0; }
  /// Mean egress backlog while the port was sending (bytes); 0 if it never sent.
  [[nodiscard]] double mean_busy_queue() const {
    return busy_ps > 0 ? static_cast<double>(queue_byte_ns) * 1e3 / static_cast<double>(busy_ps)
                       : 0.0;
  }
};

/// Per-flow outcome.
struct FlowRecord {
  std::int64_t bytes_received = 0;
  std::int64_t first_ps = -1;  ///< first byte arrived
  std::int64_t end_ps = -1;    ///< last byte arrived (-1: incomplete)
  std::uint64_t ecn_marked = 0;
};

/// PortStats's statistics (core/stat_table.hpp); the digest hashes the first thirteen.
constexpr auto stat_table(std::type_identity<PortStats>) {
  using S = PortStats;
  using stat::kDigest;
  return std::array{
      stat::sum("bytes", "B", &S::bytes, kDigest),
      stat::sum("packets", "", &S::packets, kDigest),
      stat::sum("ecn_marks", "", &S::ecn_marks, kDigest),
      stat::sum("pause_sent", "", &S::pause_sent, kDigest),
      stat::sum("pause_received", "", &S::pause_received, kDigest),
      stat::sum("drops_buffer", "", &S::drops_buffer, kDigest),
      stat::sum("drops_fec", "", &S::drops_fec, kDigest),
      stat::sum("drops_link_down", "", &S::drops_link_down, kDigest),
      stat::sum("drops_unroutable", "", &S::drops_unroutable, kDigest),
      stat::sum("fec_corrected", "", &S::fec_corrected, kDigest),
      stat::sum("fec_uncorrectable", "", &S::fec_uncorrectable, kDigest),
      stat::sum("paused_ps", "ps", &S::paused_ps, kDigest),
      stat::max("max_queue", "B", &S::max_queue, kDigest),
      stat::min("first_mark_ps", "ps", &S::first_mark_ps),
      stat::min("first_pause_ps", "ps", &S::first_pause_ps),
      stat::sum("queue_byte_ns", "B*ns", &S::queue_byte_ns),
      stat::sum("busy_ps", "ps", &S::busy_ps),
      stat::max("last_pause_ps", "ps", &S::last_pause_ps),
      stat::sum("trimmed", "", &S::trimmed),
  };
}

/// FlowRecord's statistics (the digest hashes them its own way: fabric_stats.cpp).
constexpr auto stat_table(std::type_identity<FlowRecord>) {
  using S = FlowRecord;
  return std::array{
      stat::sum("bytes_received", "B", &S::bytes_received),
      stat::min("first_ps", "ps", &S::first_ps),
      stat::max("end_ps", "ps", &S::end_ps),
      stat::sum("ecn_marked", "", &S::ecn_marked),
  };
}

/// Whole-run results, identical on every rank after collect().
struct FabricResults {
  std::vector<PortStats> ports;   ///< by global PortId
  std::vector<FlowRecord> flows;  ///< by flow id
};

class FabricModel final : public pdes::Model {
 public:
  /// `topo`, `flows` and `params` must outlive the model; params must be valid.
  FabricModel(const topology::Topology& topo, const Routing& routing, std::vector<Flow> flows,
              FabricParams params);
  ~FabricModel() override;

  void setup(std::span<const pdes::LpId> local_lps) override;
  void init_lp(pdes::LpContext& ctx) override;
  void handle(pdes::LpContext& ctx, const pdes::Event& ev) override;
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t slot) const override;

  /// Gathers every rank's counters (collective over `sync`).
  [[nodiscard]] FabricResults collect(pdes::Sync& sync) const;
  [[nodiscard]] const std::vector<Flow>& flows() const { return flows_; }
  /// PFC headroom (bytes above XOFF) used for a port's ingress.
  [[nodiscard]] std::int64_t headroom_of(topology::PortId p) const;
  /// Bytes of model state on this rank (ports, queues, flows).
  [[nodiscard]] std::size_t memory_bytes() const;
  /// Bytes of the state of the local LP in `slot` (node, ports, queued-packet pool); per-flow
  /// state is not included (by flow id, for local senders and receivers only).
  [[nodiscard]] std::size_t lp_memory_bytes(std::uint32_t slot) const;
  /// Bytes of one port's state as lp_memory_bytes counts it (hot and cold parts, backlog).
  [[nodiscard]] static std::size_t port_state_bytes();
  /// Bytes of one queued packet in a node's pool.
  [[nodiscard]] static std::size_t queued_packet_bytes();

  /// Lets `host` run the servers (instead of the raw flows); call before the engine's setup.
  /// `host` must outlive the model.
  void set_host_model(HostModel* host) { host_ = host; }
  /// Lets `agent` handle in-network packets at the switches; call before the engine's setup.
  /// `agent` must outlive the model.
  void set_in_network(InNetworkAgent* agent) { agent_ = agent; }
  /// Lets `samples` record the ports' time series (fabric_samples.hpp); call before the engine's
  /// setup. `samples` must outlive the model; null: none.
  void set_samples(FabricSamples* samples) { samples_ = samples; }
  /// The in-network agent of the switch being run sends `pkt` on its egress port `out` at `at`
  /// (>= now), with the bytes charged to ingress port `in_port` (PFC accounting).
  void emit_from_switch(pdes::LpContext& ctx, std::uint32_t out, std::uint32_t in_port,
                        const Packet& pkt, SimTime at);
  /// A host model has a packet for NIC port `nic` of the server being run: the port asks for it
  /// now if it is idle, or when it becomes free.
  void wake(pdes::LpContext& ctx, std::uint32_t nic);
  /// True if packets of traffic class `prio` are lossless (PFC).
  [[nodiscard]] bool lossless(std::uint8_t prio) const {
    return params_.pfc.enabled && prio == params_.pfc.priority;
  }
  [[nodiscard]] const FabricParams& params() const { return params_; }
  [[nodiscard]] const topology::Topology& topology() const { return topo_; }
  [[nodiscard]] const Routing& routing() const { return routing_; }
  /// The current data rate of a local NIC port (lane faults lower it).
  [[nodiscard]] DataRate nic_rate(pdes::LpContext& ctx, std::uint32_t nic) const;

 private:
  // The state of ports and nodes (src/fabric/egress_port.hpp) and of raw senders
  // (src/fabric/raw_host.cpp); the mechanisms that act on it each have their own file.
  struct QueueEntry;
  struct Fifo;
  struct PortState;
  struct PortCold;
  struct NodeState;
  /// The traffic class a packet joins at its egress and holds its ingress bytes in (they differ
  /// where a dragonfly's virtual lane changes).
  struct Classes {
    int egress;
    int ingress;
  };
  struct SendState {
    std::int64_t sent = 0;
    std::int64_t acked = 0;  // window-based flows
    std::uint32_t next_seq = 0;
    SimTime next_allowed;
  };

  [[nodiscard]] int klass(const Packet& p) const { return lossless(p.prio) ? 0 : 1; }
  PortState& port(const NodeState& n, std::uint32_t index);
  PortCold& cold(const NodeState& n, std::uint32_t index);
  /// A port's counters, hot and cold merged.
  [[nodiscard]] PortStats stats_of(std::uint32_t local_port) const;

  static void integrate_queue(PortState& e, std::int64_t backlog, SimTime now);
  static void push(NodeState& n, Fifo& q, const QueueEntry& e);
  static QueueEntry pop(NodeState& n, Fifo& q);
  void on_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, Packet pkt);
  void on_host_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, const Packet& pkt);
  /// Payload bytes of packet `seq` of flow `f`.
  [[nodiscard]] std::int64_t payload_of(const Flow& f, std::uint32_t seq) const;
  void setup_port(NodeState& n, std::uint32_t index);
  void start_flow(pdes::LpContext& ctx, NodeState& n, std::uint32_t flow);
  void schedule_faults();
  void init_faults(pdes::LpContext& ctx);
  /// PFC (pfc.hpp): XOFF when an ingress port's bytes rise above XOFF, XON at or below XON.
  void check_xoff(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, int c);
  void check_xon(pdes::LpContext& ctx, NodeState& n, std::uint32_t in_port, int c);
  void on_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t port_index, const PfcFrame& f);
  void on_fault(pdes::LpContext& ctx, NodeState& n, std::uint32_t port_index, const LinkFault& f);
  void enqueue(pdes::LpContext& ctx, NodeState& n, std::uint32_t out, std::uint32_t in_port,
               Packet pkt, SimTime tail, Classes k);
  /// An admitted packet (or trimmed header) into class c of egress `out`, charged to class ic
  /// of ingress `in_port`: the queue, its counters, the sampler, PFC's XOFF check, the port's
  /// start.
  void queue_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t out, std::uint32_t in_port,
                    const Packet& pkt, SimTime tail, int c, int ic, bool marked);
  /// fabric.trimming: `pkt`, which found no buffer at egress `out`, goes on as its headers
  /// ahead of the port's data; false if even those find no room (the caller drops it).
  bool trim(pdes::LpContext& ctx, NodeState& n, std::uint32_t out, std::uint32_t in_port,
            Packet pkt, SimTime tail);
  /// The class a switch port sends from next (-1: none ready): lanes nearest the destination
  /// first, then lossless, then lossy; a paused class waits.
  [[nodiscard]] int next_class(const PortState& e) const;
  [[nodiscard]] bool has_queued(const PortState& e) const;
  /// Undoes a dequeued switch packet's buffer accounting (egress, ingress, shared buffer) and
  /// sends XON when its ingress drops below XON.
  void release(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, int c, const QueueEntry& q);
  /// Starts the next transmission on a port if it is free, not paused and has something to send.
  void kick(pdes::LpContext& ctx, NodeState& n, std::uint32_t index);
  /// Puts one packet on the wire from `index` at ctx.now(); returns when the port is free again.
  void transmit(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, Packet pkt, SimTime tail);
  bool next_host_packet(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, Packet& out);
  void send_pfc(pdes::LpContext& ctx, NodeState& n, std::uint32_t index, int c, bool pause);
  /// Wire time of a frame on this port (preamble and gap included; a cell pays for the packets it
  /// stands for), cached for the last size.
  SimTime frame_time(PortState& ps, std::uint32_t frame) const;
  static void set_rate(PortState& ps, DataRate rate);
  [[nodiscard]] topology::PortId global_port(pdes::LpId node, std::uint32_t index) const {
    return topo_.nodes[node].first_port + index;
  }

  const topology::Topology& topo_;
  const Routing& routing_;
  HostModel* host_ = nullptr;
  InNetworkAgent* agent_ = nullptr;
  FabricSamples* samples_ = nullptr;
  std::vector<Flow> flows_;
  FabricParams params_;
  std::vector<std::vector<std::uint32_t>> flows_from_node_;  // by node: flows it sends
  std::vector<std::vector<std::uint32_t>> flows_to_node_;    // by node: flows it receives
  std::vector<std::uint32_t> flow_hash_;    // by flow: CRC-32 of its 5-tuple and label
  std::vector<std::uint32_t> ack_hash_;     // by flow: the same for its acknowledgements
  std::unique_ptr<ValiantDetour> valiant_;  // Valiant routing (null: minimal)
  bool lanes_ = false;  // dragonfly: lossless virtual lanes (valiant_detour.hpp)
  std::vector<pdes::LpId> local_;
  std::vector<NodeState> nodes_;             // by slot
  std::vector<PortState> ports_;             // local ports
  std::vector<PortCold> cold_;               // local ports, beside ports_
  std::vector<std::int64_t> backlog_;        // local ports: bytes queued (what load balancers see)
  std::vector<SendState> send_;              // by flow id (meaningful for local senders)
  std::vector<FlowRecord> recv_;             // by flow id (meaningful for local receivers)
  std::vector<std::uint32_t> slot_of_node_;  // by node id (local nodes only)
  std::vector<std::vector<std::pair<SimTime, LinkFault>>> faults_by_node_;
};

}  // namespace stepsim::fabric
