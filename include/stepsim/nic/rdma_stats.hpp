#pragma once
/// What the RDMA NICs count: per endpoint (QpStats, MessageTrace) and per NIC port (NicStats),
/// gathered over every rank into RdmaResults.

#include <cstddef>
#include <cstdint>
#include <vector>

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

}  // namespace stepsim::nic
