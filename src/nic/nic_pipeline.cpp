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
