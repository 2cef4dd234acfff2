#pragma once
/// What the RDMA NICs count: per endpoint (QpStats, MessageTrace) and per NIC port (NicStats),
/// gathered over every rank into RdmaResults.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepsim/core/stat_table.hpp"

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
  std::uint64_t ecn_received = 0;    ///< CE-marked data packets that arrived here
  std::uint64_t out_of_order = 0;    ///< data packets past a hole (placed or dropped)
  std::uint64_t duplicates = 0;      ///< data packets that were already received
  std::uint64_t state = 0;           ///< final QpState
  std::uint64_t error = 0;           ///< QpError
  std::uint64_t trimmed = 0;         ///< trimmed data packets that arrived here (each NACKed)
  std::uint64_t nacks_received = 0;  ///< NACKs of trimmed packets (each resent at once)
  /// transport.kind uet: holes the sender declared lost from its SACKs (each resent once).
  std::uint64_t sack_losses = 0;
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
};

/// QpStats's statistics (core/stat_table.hpp); the digest hashes those up to `state`.
constexpr auto stat_table(std::type_identity<QpStats>) {
  using S = QpStats;
  using stat::kDigest;
  return std::array{
      stat::sum("messages", "", &S::messages, kDigest),
      stat::sum("bytes", "B", &S::bytes, kDigest),
      stat::sum("recv_messages", "", &S::recv_messages, kDigest),
      stat::sum("packets", "", &S::packets, kDigest),
      stat::sum("retransmitted", "", &S::retransmitted, kDigest),
      stat::sum("timeouts", "", &S::timeouts, kDigest),
      stat::sum("naks_sent", "", &S::naks_sent, kDigest),
      stat::sum("naks_received", "", &S::naks_received, kDigest),
      stat::sum("acks_sent", "", &S::acks_sent, kDigest),
      stat::sum("cnps_sent", "", &S::cnps_sent, kDigest),
      stat::sum("cnps_received", "", &S::cnps_received, kDigest),
      stat::sum("ecn_received", "", &S::ecn_received, kDigest),
      stat::sum("out_of_order", "", &S::out_of_order, kDigest),
      stat::sum("duplicates", "", &S::duplicates, kDigest),
      stat::max("state", "", &S::state, kDigest),
      stat::max("error", "", &S::error),
      stat::sum("trimmed", "", &S::trimmed),
      stat::sum("nacks_received", "", &S::nacks_received),
      stat::sum("sack_losses", "", &S::sack_losses),
  };
}

/// NicStats's statistics (the digest hashes the cache misses its own way: rdma_host.cpp).
constexpr auto stat_table(std::type_identity<NicStats>) {
  using S = NicStats;
  return std::array{
      stat::sum("ctx_hits", "", &S::ctx_hits),
      stat::sum("ctx_misses", "", &S::ctx_misses),
      stat::sum("mtt_hits", "", &S::mtt_hits),
      stat::sum("mtt_misses", "", &S::mtt_misses),
      stat::sum("wqe_fetches", "", &S::wqe_fetches),
      stat::sum("tx_packets", "", &S::tx_packets),
      stat::sum("rx_packets", "", &S::rx_packets),
      stat::sum("cq_overflows", "", &S::cq_overflows),
      stat::sum("pcie_degrades", "", &S::pcie_degrades),
      stat::sum("in_network_tx", "", &S::in_network_tx),
      stat::sum("in_network_rx", "", &S::in_network_rx),
  };
}

/// MessageTrace's statistics: stage durations add up, absolute times take the latest.
constexpr auto stat_table(std::type_identity<MessageTrace>) {
  using S = MessageTrace;
  return std::array{
      stat::sum("post", "ps", &S::post),
      stat::sum("doorbell", "ps", &S::doorbell),
      stat::sum("ctx_lookup", "ps", &S::ctx_lookup),
      stat::sum("wqe_fetch", "ps", &S::wqe_fetch),
      stat::sum("pkt_gen", "ps", &S::pkt_gen),
      stat::sum("dma", "ps", &S::dma),
      stat::sum("mac", "ps", &S::mac),
      stat::max("posted_ps", "ps", &S::posted_ps),
      stat::max("sent_ps", "ps", &S::sent_ps),
      stat::max("arrived_ps", "ps", &S::arrived_ps),
      stat::max("placed_ps", "ps", &S::placed_ps),
      stat::max("cqe_ps", "ps", &S::cqe_ps),
  };
}

struct RdmaResults {
  std::vector<QpStats> endpoints;    ///< by endpoint id
  std::vector<MessageTrace> traces;  ///< by endpoint id
  std::vector<NicStats> nics;        ///< by global port id (server ports; zeros elsewhere)
};

}  // namespace stepsim::nic
