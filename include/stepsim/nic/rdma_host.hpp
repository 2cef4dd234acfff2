#pragma once
/// RDMA NICs in every server: the host model that runs above the fabric's NIC ports.
///
/// Send side: a posted work request pays the software post, the PCIe doorbell, the QP-context
/// lookup (a miss reads the context over PCIe) and the WQE fetch (a PCIe read, shared by up to
/// `wqe_prefetch` WQEs posted together; none for BlueFlame inline). Its packets then pass packet
/// generation, the payload DMA (the memory kind's read latency, the translation cache, the PCIe
/// bandwidth) and the MAC. Each stage has a latency and an occupancy on its units, computed as
/// reservations on per-stage timelines (no event per stage); at most `tx_slots` packets are in
/// the pipeline, which is what keeps a long message at line rate (Little's law).
/// Receive side: per packet the "remote processing" stage and the PCIe write of the payload; a
/// completion becomes visible a CQE write later.
/// Transport: RC with PSNs, cumulative and coalesced ACKs, NAKs on a gap, Go-Back-N or selective
/// repeat, a retransmission timeout and a retry limit (then ERROR), READ responses in the
/// requester's PSN space, per-QP congestion control (DCQCN with CNPs, HPCC with INT) and pacing.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/core/ring_queue.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/host_model.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::nic {

/// Counters of one endpoint (one side of a connection).
struct QpStats {
  std::uint64_t messages = 0;       ///< work requests completed (send side)
  std::uint64_t bytes = 0;          ///< payload bytes of those
  std::uint64_t recv_messages = 0;  ///< receive completions (SEND, WRITE with immediate)
  std::uint64_t packets = 0;        ///< data packets sent, retransmissions included
  std::uint64_t retransmitted = 0;  ///< of those, retransmissions
  std::uint64_t timeouts = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t naks_received = 0;
  std::uint64_t acks_sent = 0;
  std::uint64_t cnps_sent = 0;
  std::uint64_t cnps_received = 0;
  std::uint64_t ecn_received = 0;  ///< CE-marked data packets that arrived here
  std::uint64_t out_of_order = 0;  ///< data packets past a hole (placed or dropped)
  std::uint64_t duplicates = 0;    ///< data packets that were already received
  std::uint64_t state = 0;         ///< final QpState
  std::uint64_t error = 0;         ///< QpError
  static constexpr std::size_t kFields = 16;
};

/// Counters of one NIC (server port).
struct NicStats {
  std::uint64_t ctx_hits = 0;
  std::uint64_t ctx_misses = 0;
  std::uint64_t mtt_hits = 0;
  std::uint64_t mtt_misses = 0;
  std::uint64_t wqe_fetches = 0;  ///< PCIe reads of WQEs (prefetch makes them fewer than WQEs)
  std::uint64_t tx_packets = 0;   ///< packets sent, control packets included
  std::uint64_t rx_packets = 0;
  std::uint64_t cq_overflows = 0;
  std::uint64_t pcie_degrades = 0;  ///< PCIe faults that retrained the link lower
  std::uint64_t in_network_tx = 0;  ///< in-network (SHARP) packets sent
  std::uint64_t in_network_rx = 0;  ///< in-network (SHARP) packets received
  static constexpr std::size_t kFields = 11;
};

/// Where the time of one message went, the stages of DOMAIN.md's 256 B WRITE breakdown. An
/// endpoint's trace holds the sender fields of the last message it sent and the receiver fields
/// of the last message it received: a one-way breakdown from A to B takes A's sender fields and
/// B's receiver fields. Durations and absolute times are in picoseconds.
struct MessageTrace {
  // Sender side.
  std::int64_t post = 0;        ///< software post_send
  std::int64_t doorbell = 0;    ///< PCIe doorbell and its arbitration
  std::int64_t ctx_lookup = 0;  ///< QP-context lookup (a miss reads over PCIe)
  std::int64_t wqe_fetch = 0;   ///< PCIe read of the WQE (0 when prefetched or inline)
  std::int64_t pkt_gen = 0;     ///< first packet's generation
  std::int64_t dma = 0;         ///< first packet's payload DMA read
  std::int64_t mac = 0;         ///< MAC stage and waiting for the port
  std::int64_t posted_ps = -1;  ///< absolute post time
  std::int64_t sent_ps = -1;    ///< absolute time the first packet started on the wire
  // Receiver side (absolute times).
  std::int64_t arrived_ps = -1;  ///< last packet's arrival at the remote NIC
  std::int64_t placed_ps = -1;   ///< remote processing and payload write done
  std::int64_t cqe_ps = -1;      ///< receive CQE visible
  static constexpr std::size_t kFields = 12;
};

struct RdmaResults {
  std::vector<QpStats> endpoints;    ///< by endpoint id
  std::vector<MessageTrace> traces;  ///< by endpoint id
  std::vector<NicStats> nics;        ///< by global port id (server ports; zeros elsewhere)
};

class RdmaHost final : public fabric::HostModel {
 public:
  /// `params` must be valid; `app` (may be null) must outlive the host.
  RdmaHost(NicParams params, std::vector<Connection> connections, RdmaApp* app);
  ~RdmaHost() override;

  void setup(fabric::FabricModel& fabric, std::span<const pdes::LpId> local_lps) override;
  void init_server(pdes::LpContext& ctx) override;
  bool next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool lossless_paused,
                   fabric::Packet& out) override;
  void on_packet(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt) override;
  void on_event(pdes::LpContext& ctx, const pdes::Event& ev) override;
  [[nodiscard]] std::uint64_t digest(pdes::LpId server) const override;

  /// Gathers every rank's counters (collective over `sync`).
  [[nodiscard]] RdmaResults collect(pdes::Sync& sync) const;
  [[nodiscard]] const std::vector<Connection>& connections() const { return connections_; }
  [[nodiscard]] const NicParams& params() const { return params_; }
  /// The PCIe link a NIC of `port_rate` uses (params.pcie sized for the port when auto).
  [[nodiscard]] PcieParams pcie_for(DataRate port_rate) const;
  /// Unloaded round trip of an MTU packet and its ACK between two NICs (HPCC's T).
  [[nodiscard]] static SimTime base_rtt(const topology::Topology& topo,
                                        const fabric::Routing& routing,
                                        const fabric::FabricParams& fp, topology::PortId a,
                                        topology::PortId b);

  struct Impl;  // the per-rank state (src/nic/rdma_host.cpp)

 private:
  friend class VerbsOnServer;
  void fabric_wake(pdes::LpContext& ctx, std::uint32_t nic);
  void notify_app(pdes::LpContext& ctx, std::uint32_t endpoint);
  void notify_in_network(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt);

  NicParams params_;
  std::vector<Connection> connections_;
  RdmaApp* app_;
  std::unique_ptr<Impl> impl_;
};

/// The verbs of the server being run, for the duration of one callback.
class VerbsOnServer final : public Verbs {
 public:
  VerbsOnServer(RdmaHost& host, pdes::LpContext& ctx) : host_(host), ctx_(ctx) {}
  [[nodiscard]] SimTime now() const override;
  [[nodiscard]] topology::NodeId server() const override;
  bool post(std::uint32_t endpoint, const WorkRequest& wr) override;
  std::size_t poll_cq(std::uint32_t endpoint, std::span<Completion> out) override;
  [[nodiscard]] QpState state(std::uint32_t endpoint) const override;
  void schedule(SimTime delay, std::uint32_t tag) override;
  void send_in_network(topology::PortId nic, const fabric::Packet& pkt) override;

 private:
  RdmaHost& host_;
  pdes::LpContext& ctx_;
};

/// Sets what the fabric must do for the NIC parameters (INT telemetry for HPCC).
void configure_fabric(const NicParams& nic, fabric::FabricParams& fabric);

}  // namespace stepsim::nic
