#include "stepsim/nic/nic_params.hpp"

#include <array>

#include "stepsim/core/named_values.hpp"

#include "src/nic/retransmission_strategy.hpp"
#include "stepsim/config/param_table.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/nic_presets.hpp"
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

namespace {

constexpr std::array<NamedValue<MemoryKind>, 4> kMemoryKinds{{
    {MemoryKind::kHost, "host"},
    {MemoryKind::kGpuDirect, "gpudirect"},
    {MemoryKind::kGpuRootComplex, "gpu_root_complex"},
    {MemoryKind::kGpuBounce, "bounce"},
}};

}  // namespace

Result<MemoryKind> parse_memory_kind(const std::string& name) {
  if (auto k = find_named(kMemoryKinds, name)) return *k;
  return Error{"unknown memory kind '" + name + "' (allowed: " + allowed_names(kMemoryKinds) + ")"};
}

std::string memory_kind_name(MemoryKind k) {
  return name_of(kMemoryKinds, k);
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
  if (kind != "roce" && kind != "uet") {
    return Error{"transport.kind '" + kind + "' is unknown (allowed: roce, uet)"};
  }
  if (kind == "uet" && sr_window > 32768) {
    return Error{
        "transport.sr_window must be at most 32768 with transport.kind uet (its ACKs "
        "carry the PSN they answer as a 16-bit offset)"};
  }
  if (auto r = parse_retransmission(retransmission); !r) return r.error();
  if (kind == "uet" && retransmission != "auto" && retransmission != "selective") {
    return Error{
        "transport.kind uet delivers out of order: transport.retransmission must be auto "
        "or selective, not " +
        retransmission};
  }
  if (auto r = cc::congestion_control_needs(cc); !r) return r.error();
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

namespace {

std::string preset_names() {
  std::string names;
  for (const NicPreset& n : nic_presets()) names += (names.empty() ? "" : ", ") + n.name;
  return names;
}

// transport.retransmission's help: the strategies and the policies that make auto selective,
// from their registries.
std::string retransmission_help() {
  std::string reorder;
  for (const std::string& lb : fabric::load_balancer_names()) {
    if (fabric::lb_reorders(lb)) reorder += (reorder.empty() ? "" : ", ") + lb;
  }
  std::string strategies;
  const std::vector<std::string> names = retransmission_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    strategies += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return "auto (selective when fabric.lb reorders: " + reorder + "; else gbn), " + strategies;
}

}  // namespace

config::ParamTable nic_param_table(NicParams& p) {
  config::ParamTable t;
  const SimTime max_time = SimTime::s(1);
  t.real("nic.clock_mhz", p.clock_mhz, 1, 10'000, "pipeline clock (MHz)");
  t.time("nic.post_overhead", p.post_overhead, SimTime::zero(), max_time, "software post_send");
  for (auto& [name, st] : {std::pair<const char*, StageParams*>{"doorbell", &p.doorbell},
                           {"ctx_lookup", &p.ctx_lookup},
                           {"wqe_fetch", &p.wqe_fetch},
                           {"pkt_gen", &p.pkt_gen},
                           {"dma", &p.dma},
                           {"mac_tx", &p.mac_tx},
                           {"rx", &p.rx}}) {
    const std::string k = std::string("nic.") + name;
    t.time(k + ".latency", st->latency, SimTime::zero(), max_time,
           "stage latency (at least its cycles)");
    t.integer(k + ".cycles", st->cycles, 1, 1000, "stage occupancy per item (cycles)");
    t.integer(k + ".units", st->units, 1, 8, "parallel units of the stage");
  }
  t.add({"nic.model",
         "a shipped NIC (" + preset_names() + ") or none: sets nic.pcie to its host link",
         [&p](const std::string& name) -> Result<bool> {
           if (name == "none") {
             p.model.clear();
             return true;
           }
           auto n = nic_preset(name);
           if (!n) return n.error();
           p.model = n->name;
           p.pcie.gen = n->pcie_gen;
           p.pcie.lanes = n->pcie_lanes;
           p.pcie.auto_size = false;
           return true;
         },
         [&p] { return p.model.empty() ? std::string("none") : p.model; }});
  t.add({"nic.pcie", "host link: auto (sized for the port) or genGxW, e.g. gen5x16",
         [&p](const std::string& text) -> Result<bool> {
           auto v = parse_pcie(text, p.pcie);
           if (!v) return v.error();
           p.pcie = *v;
           return true;
         },
         [&p] { return p.pcie.auto_size ? std::string("auto") : link_name(p.pcie); }});
  t.time("nic.pcie_doorbell", p.pcie.doorbell, SimTime::zero(), max_time, "PCIe posted doorbell");
  t.time("nic.pcie_read_latency", p.pcie.read_latency, SimTime::zero(), max_time,
         "PCIe read of a WQE, context or translation");
  t.time("nic.pcie_dma_read_latency", p.pcie.dma_read_latency, SimTime::zero(), max_time,
         "first completion of a payload read (host memory or GPUDirect)");
  t.time("nic.pcie_root_complex_read_latency", p.pcie.root_complex_read_latency, SimTime::zero(),
         max_time, "payload read from a GPU across the root complex");
  t.time("nic.pcie_write_latency", p.pcie.write_latency, SimTime::zero(), max_time,
         "posted write until visible (CQE)");
  t.add({"nic.memory", "host, gpudirect, gpu_root_complex or bounce",
         [&p](const std::string& text) -> Result<bool> {
           auto v = parse_memory_kind(text);
           if (!v) return v.error();
           p.memory = *v;
           return true;
         },
         [&p] { return memory_kind_name(p.memory); }});
  t.time("nic.bounce_copy_latency", p.bounce_copy_latency, SimTime::zero(), max_time,
         "launch latency of a GPU <-> bounce buffer copy");
  t.bytes("nic.inline_threshold", p.inline_threshold, 0, 1024, "BlueFlame inline up to (0: off)");
  t.integer("nic.wqe_prefetch", p.wqe_prefetch, 1, 64, "WQEs per PCIe fetch");
  t.boolean("nic.qp_in_order", p.qp_in_order, "one WQE at a time per QP");
  t.bytes("nic.qp_cache", p.qp_cache, 16, std::int64_t{1} << 30, "QP-context SRAM");
  t.bytes("nic.qp_context", p.qp_context, 16, 65536, "bytes per QP context");
  t.integer("nic.mtt_entries", p.mtt_entries, 1, 1 << 24, "translation cache entries");
  t.bytes("nic.page", p.page, 4096, std::int64_t{1} << 30, "translation page (power of two)");
  t.integer("nic.tx_slots", p.tx_slots, 1, 4096, "packets in the send pipeline");
  t.integer("nic.cq_depth", p.cq_depth, 1, 1 << 24, "completions a CQ holds");
  t.add({"transport.kind",
         "roce (RC, one path per QP) or uet (Ultra Ethernet kind: unordered delivery, "
         "per-packet entropy, SACK-based loss detection, NACKs of trimmed packets; cc nscc "
         "unless cc.algorithm is set)",
         [&p](const std::string& text) -> Result<bool> {
           if (text != "roce" && text != "uet") {
             return Error{"'" + text + "' is not allowed (allowed: roce, uet)"};
           }
           p.kind = text;
           // The unordered transport's own congestion control, unless one was chosen.
           if (!p.cc.algorithm_chosen)
             p.cc.algorithm = text == "uet" ? "nscc" : cc::CcParams{}.algorithm;
           return true;
         },
         [&p] { return p.kind; }},
        {"roce", "uet"});
  t.add({"transport.retransmission", retransmission_help(),
         [&p](const std::string& text) -> Result<bool> {
           auto v = parse_retransmission(text);
           if (!v) return v.error();
           p.retransmission = *v;
           return true;
         },
         [&p] { return p.retransmission; }});
  t.time("transport.rto", p.rto, SimTime::ns(1), max_time, "retransmission timeout");
  t.integer("transport.retry_count", p.retry_count, 0, 7, "timeouts before ERROR");
  t.integer("transport.ack_coalesce", p.ack_coalesce, 1, 1 << 16, "in-order packets per ACK");
  t.integer("transport.nak_threshold", p.nak_threshold, 1, 1 << 16,
            "selective repeat: packets past a hole before a NAK");
  t.integer("transport.sr_window", p.sr_window, 16, 1 << 20,
            "selective repeat: PSNs held past a hole (power of two)");
  t.time("transport.reorder_window", p.reorder_window, SimTime::zero(), max_time,
         "uet: a hole is lost once a packet sent this much later arrived (0: auto)");
  cc::declare_cc_params(t, p.cc);
  return t;
}

}  // namespace stepsim::nic
