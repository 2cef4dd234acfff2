#include "stepsim/nic/nic_params.hpp"

#include "stepsim/nic/verbs.hpp"

namespace stepsim::nic {
namespace {

Result<bool> check_stage(const char* name, const StageParams& s) {
  if (s.latency < SimTime::zero())
    return Error{std::string("nic.") + name + ".latency must be >= 0"};
  if (s.cycles < 1 || s.cycles > 1000)
    return Error{std::string("nic.") + name + ".cycles must be 1..1000"};
  if (s.units < 1 || s.units > 8) return Error{std::string("nic.") + name + ".units must be 1..8"};
  return true;
}

}  // namespace

Result<MemoryKind> parse_memory_kind(const std::string& name) {
  if (name == "host") return MemoryKind::kHost;
  if (name == "gpudirect") return MemoryKind::kGpuDirect;
  if (name == "gpu_root_complex") return MemoryKind::kGpuRootComplex;
  if (name == "bounce") return MemoryKind::kGpuBounce;
  return Error{"unknown memory kind '" + name +
               "' (allowed: host, gpudirect, gpu_root_complex, bounce)"};
}

std::string memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kGpuDirect:
      return "gpudirect";
    case MemoryKind::kGpuRootComplex:
      return "gpu_root_complex";
    case MemoryKind::kGpuBounce:
      return "bounce";
  }
  return "?";
}

Result<Retransmission> parse_retransmission(const std::string& name) {
  if (name == "gbn" || name == "go_back_n") return Retransmission::kGoBackN;
  if (name == "sr" || name == "selective") return Retransmission::kSelective;
  return Error{"unknown retransmission '" + name + "' (allowed: gbn, selective)"};
}

std::string retransmission_name(Retransmission r) {
  return r == Retransmission::kGoBackN ? "gbn" : "selective";
}

Result<bool> NicParams::validate() const {
  if (!(clock_mhz >= 1 && clock_mhz <= 10'000)) return Error{"nic.clock_mhz must be 1..10000"};
  if (post_overhead < SimTime::zero()) return Error{"nic.post_overhead must be >= 0"};
  for (const auto& [name, st] :
       {std::pair{"doorbell", doorbell}, std::pair{"ctx_lookup", ctx_lookup},
        std::pair{"wqe_fetch", wqe_fetch}, std::pair{"pkt_gen", pkt_gen}, std::pair{"dma", dma},
        std::pair{"mac_tx", mac_tx}, std::pair{"rx", rx}}) {
    if (auto r = check_stage(name, st); !r) return r;
  }
  if (auto r = pcie.validate(); !r) return r;
  if (bounce_copy_latency < SimTime::zero()) return Error{"nic.bounce_copy_latency must be >= 0"};
  if (inline_threshold < 0 || inline_threshold > 1024)
    return Error{"nic.inline_threshold must be 0..1024 bytes"};
  if (wqe_prefetch < 1 || wqe_prefetch > 64) return Error{"nic.wqe_prefetch must be 1..64"};
  if (qp_context.count() < 16 || qp_cache.count() < qp_context.count())
    return Error{"nic.qp_cache must hold at least one nic.qp_context (>= 16 B)"};
  if (mtt_entries < 1) return Error{"nic.mtt_entries must be >= 1"};
  if (page.count() < 4096 || (page.count() & (page.count() - 1)) != 0)
    return Error{"nic.page must be a power of two >= 4096 B"};
  if (tx_slots < 1 || tx_slots > 4096) return Error{"nic.tx_slots must be 1..4096"};
  if (cq_depth < 1) return Error{"nic.cq_depth must be >= 1"};
  if (rto <= SimTime::zero()) return Error{"nic.rto must be > 0"};
  if (retry_count < 0 || retry_count > 7) return Error{"nic.retry_count must be 0..7 (IB: 3 bits)"};
  if (ack_coalesce < 1) return Error{"nic.ack_coalesce must be >= 1"};
  if (nak_threshold < 1) return Error{"nic.nak_threshold must be >= 1"};
  for (const PcieFault& f : pcie_faults) {
    if (f.gen < 3 || f.gen > 7) return Error{"nic.pcie_faults: gen must be 3..7"};
    if (f.at < SimTime::zero()) return Error{"nic.pcie_faults: time must be >= 0"};
  }
  if (sr_window < 16 || (sr_window & (sr_window - 1)) != 0)
    return Error{"nic.sr_window must be a power of two >= 16"};
  return true;
}

std::string opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
      return "write";
    case Opcode::kWriteImm:
      return "write_imm";
    case Opcode::kSend:
      return "send";
    case Opcode::kRead:
      return "read";
  }
  return "?";
}

std::string qp_state_name(QpState s) {
  switch (s) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kError:
      return "ERROR";
  }
  return "?";
}

std::string qp_error_name(QpError e) {
  switch (e) {
    case QpError::kNone:
      return "none";
    case QpError::kRetryExceeded:
      return "retry_exceeded";
    case QpError::kCqOverflow:
      return "cq_overflow";
  }
  return "?";
}

}  // namespace stepsim::nic
