#include "src/nic/nic_pipeline.hpp"

#include <algorithm>

#include "stepsim/fabric/packet.hpp"

namespace stepsim::nic {

NicPipeline::NicPipeline(const NicParams& p, std::int64_t wire_mtu)
    : p_(p),
      wire_mtu_(wire_mtu),
      doorbell_(Stage::at_clock(p.doorbell, p)),
      ctx_(Stage::at_clock(p.ctx_lookup, p)),
      wqe_(Stage::at_clock(p.wqe_fetch, p)),
      gen_(Stage::at_clock(p.pkt_gen, p)),
      dma_(Stage::at_clock(p.dma, p)),
      mac_(Stage::at_clock(p.mac_tx, p)),
      rx_(Stage::at_clock(p.rx, p)) {}

PipelineState NicPipeline::make_state(const PcieParams& pcie) const {
  PipelineState s;
  s.pcie = pcie;
  s.ctx_cache = TagCache(p_.qp_cache.count() / p_.qp_context.count(), 8);
  s.mtt = TagCache(p_.mtt_entries, 8);
  return s;
}

std::int64_t NicPipeline::packets_in(std::int64_t payload) const {
  return fabric::packets_in_frame(payload, wire_mtu_);
}

SimTime NicPipeline::context(PipelineState& s, NicStats& stats, std::uint64_t qp, SimTime t) const {
  if (!s.ctx_cache.access(qp)) {
    ++stats.ctx_misses;
    return t + s.pcie.read_latency;
  }
  ++stats.ctx_hits;
  return t;
}

SimTime NicPipeline::doorbell(PipelineState& s, SimTime t, std::int64_t inline_bytes,
                              bool inl) const {
  SimTime at = t + s.pcie.doorbell;
  if (inl) at += transfer_time(s.pcie, Bytes(64 + inline_bytes));  // BlueFlame: WQE and data
  return s.doorbell.reserve(doorbell_, at);
}

SimTime NicPipeline::context_stage(PipelineState& s, NicStats& stats, std::uint64_t qp,
                                   SimTime t) const {
  return s.ctx.reserve(ctx_, context(s, stats, qp, t));
}

SimTime NicPipeline::wqe_stage(PipelineState& s, SimTime t) const {
  return s.wqe.reserve(wqe_, t);
}

SendTiming NicPipeline::send(PipelineState& s, NicStats& stats, std::uint64_t qp,
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
SimTime NicPipeline::dma_read(PipelineState& s, NicStats& stats, const PacketWork& work, SimTime t,
                              std::int64_t packets) const {
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

SimTime NicPipeline::receive(PipelineState& s, NicStats& stats, std::uint64_t qp,
                             std::int64_t payload, SimTime now) const {
  return s.rx.reserve(rx_, context(s, stats, qp, now), packets_in(payload));
}

// A cell's write starts when its first packet arrived, as its packets' writes would, and ends no
// sooner than its last packet's would.
SimTime NicPipeline::place(PipelineState& s, DataRate line, SimTime at,
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

SimTime NicPipeline::read_in_network(PipelineState& s, SimTime now, std::int64_t payload) const {
  const SimTime start = std::max(now + s.pcie.dma_read_latency, s.rd_free);
  s.rd_free = start + transfer_time(s.pcie, Bytes(payload));
  return s.rd_free;
}

SimTime NicPipeline::bounce_copy(const PipelineState& s, std::int64_t bytes) const {
  if (p_.memory != MemoryKind::kGpuBounce) return SimTime::zero();
  return p_.bounce_copy_latency + transfer_time(s.pcie, Bytes(bytes));
}

}  // namespace stepsim::nic
