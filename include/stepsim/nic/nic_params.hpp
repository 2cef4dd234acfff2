#pragma once
/// Parameters of an RDMA NIC (DOMAIN.md section 2): the send and receive pipelines, the PCIe host
/// interface, the context and translation caches, where the payload lives (GPUDirect or a host
/// bounce buffer), completion queues and the RC transport's reliability settings.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/config/param_table.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/nic/pcie.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

/// One pipeline stage: `latency` from entry to exit, and `cycles` of occupancy per item on one of
/// `units` parallel units (the stage's throughput limit: units x clock / cycles items per second).
struct StageParams {
  SimTime latency;
  int cycles = 1;
  int units = 1;
};

/// Where a WQE's payload lives, hence the DMA path (DOMAIN.md section 2).
enum class MemoryKind : std::uint8_t {
  kHost,            ///< host memory through the root complex
  kGpuDirect,       ///< GPU memory, peer-to-peer through a PCIe switch (GPUDirect RDMA)
  kGpuRootComplex,  ///< GPU memory, peer-to-peer across the root complex
  kGpuBounce,       ///< GPU memory copied through a host bounce buffer (no GPUDirect)
};

/// Parses "host", "gpudirect", "gpu_root_complex", "bounce"; the error lists them.
Result<MemoryKind> parse_memory_kind(const std::string& name);
std::string memory_kind_name(MemoryKind k);

/// The registered name of a retransmission strategy ("gbn", "selective"; "go_back_n" and "sr"
/// are accepted for them) or "auto"; the error lists them.
Result<std::string> parse_retransmission(const std::string& name);
/// The strategy a QP runs: `name`, or for "auto" selective repeat when the load-balancing
/// policy `lb` declares that it reorders a flow's packets (fabric::LbTraits::reorders) and
/// Go-Back-N otherwise.
std::string resolve_retransmission(const std::string& name, const std::string& lb);

/// A PCIe fault (AER): at `at`, the host link of NIC port `nic` (global port id) retrains at
/// generation `gen` with the same width (DOMAIN.md: Gen5 x16 -> Gen4 x16 halves DMA bandwidth).
struct PcieFault {
  topology::PortId nic = 0;
  SimTime at;
  int gen = 4;
};

struct NicParams {
  double clock_mhz = 322.26;  ///< pipeline clock (3.1 ns per cycle)
  // Send pipeline: cycle counts from DOMAIN.md's RTL (doorbell_arb 2, ctx_lookup 4, wqe_fetch 6,
  // pkt_gen 8, dma_eng 10, mac_tx 3); latencies from its 256 B WRITE breakdown.
  SimTime post_overhead = SimTime::ns(50);        ///< software post_send, before the doorbell
  StageParams doorbell{SimTime::zero(), 2, 1};    ///< arbitration (latency is the PCIe doorbell)
  StageParams ctx_lookup{SimTime::zero(), 4, 1};  ///< latency 0: its cycles (hit)
  StageParams wqe_fetch{SimTime::zero(), 6, 1};   ///< latency is the PCIe read
  StageParams pkt_gen{SimTime::ns(100), 8, 2};
  StageParams dma{SimTime::zero(), 10, 2};  ///< latency is the PCIe DMA read
  StageParams mac_tx{SimTime::zero(), 3, 1};
  /// Receive side: "remote processing" (parse, context, placement) per packet.
  StageParams rx{SimTime::ns(50), 8, 2};
  PcieParams pcie;
  /// The shipped NIC picked by `nic.model` (nic_presets.hpp), "" when none: it fixes `pcie`.
  std::string model;
  MemoryKind memory = MemoryKind::kHost;
  SimTime bounce_copy_latency = SimTime::us(2);  ///< a GPU<->host copy's launch latency
  /// Bytes up to which a WQE is written with its doorbell (BlueFlame inline): no WQE fetch and no
  /// payload DMA. 0: off.
  std::int64_t inline_threshold = 0;
  int wqe_prefetch = 4;  ///< WQEs one PCIe read fetches when several are posted
  /// One QP handles one WQE at a time from its context lookup to its first packet's generation
  /// (the context's read-modify-write): successive WQEs of a QP are at least ctx_lookup +
  /// wqe_fetch cycles + pkt_gen latency apart, ~7.6 M messages/s per QP at the defaults (DOMAIN.md
  /// section 7: 7.7 Mpps for one QP of 256 B WRITEs). Other QPs overlap.
  bool qp_in_order = true;
  Bytes qp_cache = Bytes(256 * 1024);  ///< QP-context SRAM
  Bytes qp_context = Bytes(256);       ///< bytes of one QP context
  int mtt_entries = 4096;              ///< memory-translation cache entries
  Bytes page = Bytes(64 * 1024);       ///< translation page (GPU BAR pages are 64 KiB)
  int tx_slots = 64;  ///< packets in the send pipeline at once (outstanding DMA reads)
  int cq_depth = 16384;
  // RC transport.
  /// The transport: "roce" (RoCEv2 RC: one path per QP, retransmission as below) or "uet" (of
  /// the Ultra Ethernet kind: reliable unordered delivery, each packet with its own entropy so
  /// that ECMP sprays it, selective retransmission, NACKs of trimmed packets resent at once).
  std::string kind = "roce";
  /// A retransmission strategy by registry name (retransmission_strategy.hpp): "gbn" (Go-Back-N)
  /// or "selective" (selective repeat), or "auto": selective repeat when the fabric's
  /// load balancing reorders packets (fabric::LbTraits::reorders), Go-Back-N otherwise, as NICs
  /// that spray place out of order.
  std::string retransmission = "auto";
  SimTime rto = SimTime::us(50);  ///< retransmission timeout
  int retry_count = 7;            ///< timeouts in a row before the QP goes to ERROR
  int ack_coalesce = 8;           ///< ACK after this many in-order packets (and every message end)
  /// Selective repeat: NAK a hole once this many later packets arrived (reordering tolerance:
  /// sprayed paths reorder by their latency skew over a packet time, ~7 packets for 600 ns at
  /// 400G; a real loss is recovered that many packets later).
  int nak_threshold = 16;
  int sr_window = 4096;  ///< selective repeat: PSNs past the hole the receiver can hold
  /// transport.kind uet: a PSN not acknowledged is lost once a packet sent this much later has
  /// arrived (the sender's SACK-based loss detection; 0: auto, see RcTransport).
  SimTime reorder_window = SimTime::zero();
  cc::CcParams cc;
  std::vector<PcieFault> pcie_faults;

  [[nodiscard]] SimTime cycles(int n) const {
    return SimTime::ps(static_cast<std::int64_t>(static_cast<double>(n) * 1e6 / clock_mhz + 0.5));
  }
  /// Checks ranges; the error names the parameter and the allowed values.
  [[nodiscard]] Result<bool> validate() const;
};

/// Every NIC, transport and congestion-control parameter of `p` by key ("nic.rto" style paths
/// under nic., transport., cc.): for YAML files, --set overrides and `stepsim list nic`. The
/// table refers to `p`, which must outlive it.
config::ParamTable nic_param_table(NicParams& p);

}  // namespace stepsim::nic
