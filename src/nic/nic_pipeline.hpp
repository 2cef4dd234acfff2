#pragma once
// The stages of an RDMA NIC (DOMAIN.md section 2) as reservations on per-stage timelines: the
// send side (doorbell arbitration, QP-context lookup, WQE fetch, packet generation, payload DMA
// with its translation cache and the PCIe read bandwidth, MAC) and the receive side (remote
// processing, the PCIe write of the payload). NicPipeline holds what every NIC shares (the
// parameters at the NIC clock); PipelineState is one NIC port's timelines, PCIe and caches.
// Simplifications: a stage's units are identical; PCIe reads and writes each have one queue.

#include <algorithm>
#include <cstdint>

#include "src/nic/stage_timeline.hpp"
#include "src/nic/tag_cache.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/pcie.hpp"
#include "stepsim/nic/rdma_stats.hpp"

namespace stepsim::nic {

/// One NIC port's pipeline: its stage timelines, PCIe link and caches.
struct PipelineState {
  PcieParams pcie;
  StageTimeline doorbell, ctx, wqe, gen, dma, mac, rx;
  SimTime rd_free;  ///< PCIe, NIC reading host/GPU memory
  SimTime wr_free;  ///< PCIe, NIC writing host/GPU memory
  TagCache ctx_cache;
  TagCache mtt;
};

/// What a packet asks of the send pipeline.
struct PacketWork {
  std::int64_t payload = 0;    ///< bytes read from memory (0: none)
  bool dma = true;             ///< read over PCIe (false: inline, or a READ request)
  std::uint64_t page_key = 0;  ///< the translation its payload needs
};

/// When a packet passed each point of the send pipeline (absolute times).
struct SendTiming {
  SimTime start;      ///< its QP context is read (after a miss's PCIe read)
  SimTime generated;  ///< out of packet generation
  SimTime fetched;    ///< payload DMA done (its first MTU's bytes)
  SimTime ready;      ///< out of the MAC stage: ready for the port
};

class NicPipeline {
 public:
  /// `wire_mtu`: payload bytes of an MTU packet (a cell at cell fidelity stands for several).
  NicPipeline(const NicParams& p, std::int64_t wire_mtu);

  /// A fresh port: its caches sized from the parameters, on PCIe link `pcie`.
  [[nodiscard]] PipelineState make_state(const PcieParams& pcie) const;
  /// MTU packets a frame of `payload` bytes stands for; the per-packet stages work that many times.
  [[nodiscard]] std::int64_t packets_in(std::int64_t payload) const;
  /// Reads QP `qp`'s context at `t`: `t` on a hit, a PCIe read later on a miss (counted).
  SimTime context(PipelineState& s, NicStats& stats, std::uint64_t qp, SimTime t) const;

  // Posting a WQE (each returns when the WQE leaves the stage).
  /// The PCIe doorbell (with the WQE and `inline_bytes` of data for BlueFlame; 0: none) and its
  /// arbitration.
  SimTime doorbell(PipelineState& s, SimTime t, std::int64_t inline_bytes, bool inl) const;
  /// The QP-context lookup stage.
  SimTime context_stage(PipelineState& s, NicStats& stats, std::uint64_t qp, SimTime t) const;
  /// The WQE fetch stage, entered at `t` (its PCIe read already paid by the caller).
  SimTime wqe_stage(PipelineState& s, SimTime t) const;

  /// A packet of QP `qp` built at `now`: generation, payload DMA, MAC.
  SendTiming send(PipelineState& s, NicStats& stats, std::uint64_t qp, const PacketWork& work,
                  SimTime now) const;
  /// A packet of `payload` bytes for QP `qp` arrived at `now`: when remote processing is done.
  SimTime receive(PipelineState& s, NicStats& stats, std::uint64_t qp, std::int64_t payload,
                  SimTime now) const;
  /// Writes a payload whose tail arrived at `at` (on a port of rate `line`); returns when it is
  /// in memory.
  SimTime place(PipelineState& s, DataRate line, SimTime at, std::int64_t payload) const;
  /// Reads an in-network packet's payload; returns when its bytes are in.
  SimTime read_in_network(PipelineState& s, SimTime now, std::int64_t payload) const;
  /// Without GPUDirect (MemoryKind::kGpuBounce) a payload is copied between the GPU and a host
  /// bounce buffer: a copy's launch latency plus the bytes over PCIe. Zero otherwise.
  [[nodiscard]] SimTime bounce_copy(const PipelineState& s, std::int64_t bytes) const;

 private:
  SimTime dma_read(PipelineState& s, NicStats& stats, const PacketWork& work, SimTime t,
                   std::int64_t packets) const;

  const NicParams& p_;
  std::int64_t wire_mtu_;
  Stage doorbell_, ctx_, wqe_, gen_, dma_, mac_, rx_;
};

// --- the per-packet stages, inline (the hot path) -------------------------------------------

inline std::int64_t NicPipeline::packets_in(std::int64_t payload) const {
  return fabric::packets_in_frame(payload, wire_mtu_);
}

inline SimTime NicPipeline::context(PipelineState& s, NicStats& stats, std::uint64_t qp,
                                    SimTime t) const {
  if (!s.ctx_cache.access(qp)) {
    ++stats.ctx_misses;
    return t + s.pcie.read_latency;
  }
  ++stats.ctx_hits;
  return t;
}

inline SendTiming NicPipeline::send(PipelineState& s, NicStats& stats, std::uint64_t qp,
                                    const PacketWork& work, SimTime now) const {
  // Generating a packet reads the QP's context (PSN, addresses): a miss reads it over PCIe,
  // which is what makes thousands of active QPs slower than a few.
  SendTiming tm;
  tm.start = context(s, stats, qp, now);
  const std::int64_t packets = packets_in(work.payload);
  tm.generated = s.gen.reserve(gen_, tm.start, packets);
  tm.fetched = tm.generated;
  if (work.dma && work.payload > 0) tm.fetched = dma_read(s, stats, work, tm.generated, packets);
  tm.ready = s.mac.reserve(mac_, tm.fetched, packets);
  return tm;
}

// The payload read: the memory's latency (a translation miss adds a PCIe read), the DMA engine,
// and the bytes at the link's rate after the reads before them.
inline SimTime NicPipeline::dma_read(PipelineState& s, NicStats& stats, const PacketWork& work,
                                     SimTime t, std::int64_t packets) const {
  SimTime lat = s.pcie.dma_read_latency;
  if (p_.memory == MemoryKind::kGpuRootComplex) lat = s.pcie.root_complex_read_latency;
  if (!s.mtt.access(work.page_key)) {
    ++stats.mtt_misses;
    lat += s.pcie.read_latency;
  } else {
    ++stats.mtt_hits;
  }
  const SimTime engine = s.dma.reserve(dma_, t, packets);
  const SimTime start = std::max(t + lat, s.rd_free);
  s.rd_free = start + transfer_time(s.pcie, Bytes(work.payload));
  // A cell goes out once its first packet's bytes are in (cut-through, as its packets would).
  return std::max(engine, start + transfer_time(s.pcie, Bytes(std::min(work.payload, wire_mtu_))));
}

inline SimTime NicPipeline::receive(PipelineState& s, NicStats& stats, std::uint64_t qp,
                                    std::int64_t payload, SimTime now) const {
  return s.rx.reserve(rx_, context(s, stats, qp, now), packets_in(payload));
}

// A cell's write starts when its first packet arrived, as its packets' writes would, and ends no
// sooner than its last packet's would.
inline SimTime NicPipeline::place(PipelineState& s, DataRate line, SimTime at,
                                  std::int64_t payload) const {
  SimTime head = at;
  if (payload > wire_mtu_) {
    const auto frame = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
    const auto first = static_cast<std::uint32_t>(wire_mtu_ + fabric::kRoceHeaderBytes);
    head -= line.serialization_time(
        Bytes(fabric::wire_bytes(frame, wire_mtu_) - fabric::wire_bytes(first, wire_mtu_)));
  }
  s.wr_free = std::max(std::max(head, s.wr_free) + transfer_time(s.pcie, Bytes(payload)),
                       at + transfer_time(s.pcie, Bytes(std::min(payload, wire_mtu_))));
  return s.wr_free;
}

}  // namespace stepsim::nic
