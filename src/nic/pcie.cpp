// PCIe host-interface bandwidth from the PCI Express Base Specification's per-generation figures:
// 8/16/32 GT/s NRZ with 128b/130b encoding for Gen3/4/5; 64/128 GT/s PAM4 in FLIT mode for
// Gen6/7, where each 256-byte flit holds 236 B of TLPs, 6 B data-link payload (Ack/Nak, credits),
// 8 B CRC and 6 B FEC. Per TLP, Gen3-5 add a 4 B STP framing token (carrying the sequence number)
// and a 4 B LCRC to a 16 B 4DW header (64-bit address); flit mode drops the per-TLP framing and
// LCRC but keeps the 16 B header. Simplified: DLLP traffic on Gen3-5, ECRC, and the read requests
// travelling the other way are not charged; read completions are costed like MPS-sized writes
// (real completions have 12 B 3DW headers, ~1% faster, but may be split at the 64/128 B RCB).
#include "stepsim/nic/pcie.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <utility>

#include "stepsim/core/named_values.hpp"

namespace stepsim::nic {
namespace {

constexpr int kMinGen = 3;
constexpr int kMaxGen = 7;
constexpr int kWidths[] = {1, 2, 4, 8, 16, 32};
constexpr int kTransferSizes[] = {128, 256, 512, 1024, 2048, 4096};

// "accepted: auto, gen<G>x<L> with G 3..7 and L 1, 2, ..., such as gen5x16".
std::string link_forms() {
  return "accepted: auto, gen<G>x<L> with G " + std::to_string(kMinGen) + ".." +
         std::to_string(kMaxGen) + " and L " + number_list(kWidths) + ", such as gen5x16";
}

/// Transfers per second per lane.
std::int64_t lane_rate(int gen) {
  // Gen3 8 GT/s, doubling each generation.
  return 8'000'000'000LL << std::clamp(gen - kMinGen, 0, kMaxGen - kMinGen);
}

bool flit_mode(int gen) {
  return gen >= 6;
}

/// Fraction of link bits that carry TLP bytes, as numerator/denominator.
struct Ratio {
  std::int64_t num;
  std::int64_t den;
};

Ratio encoding(int gen) {
  return flit_mode(gen) ? Ratio{236, 256} : Ratio{128, 130};
}

bool valid_transfer_size(Bytes b) {
  return std::find(std::begin(kTransferSizes), std::end(kTransferSizes), b.count()) !=
         std::end(kTransferSizes);
}

Result<bool> check_non_negative(SimTime t, const char* key) {
  if (t < SimTime::zero()) return Error{std::string("pcie.") + key + " must not be negative"};
  return true;
}

/// Ceiling of a / b for a >= 0, b > 0.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Result<bool> PcieParams::validate() const {
  if (gen < kMinGen || gen > kMaxGen) {
    return Error{"pcie.gen = " + std::to_string(gen) + " is not supported (allowed: " +
                 std::to_string(kMinGen) + ".." + std::to_string(kMaxGen) + ")"};
  }
  if (std::find(std::begin(kWidths), std::end(kWidths), lanes) == std::end(kWidths)) {
    return Error{"pcie.lanes = " + std::to_string(lanes) +
                 " is not a PCIe link width (allowed: " + number_list(kWidths) + ")"};
  }
  if (!valid_transfer_size(max_payload)) {
    return Error{"pcie.max_payload = " + std::to_string(max_payload.count()) +
                 " B (allowed: " + number_list(kTransferSizes) + ")"};
  }
  if (!valid_transfer_size(max_read_request)) {
    return Error{"pcie.max_read_request = " + std::to_string(max_read_request.count()) +
                 " B (allowed: " + number_list(kTransferSizes) + ")"};
  }
  const std::pair<SimTime, const char*> latencies[] = {
      {doorbell, "doorbell"},
      {read_latency, "read_latency"},
      {dma_read_latency, "dma_read_latency"},
      {root_complex_read_latency, "root_complex_read_latency"},
      {write_latency, "write_latency"}};
  for (const auto& [t, key] : latencies) {
    if (auto r = check_non_negative(t, key); !r) return r;
  }
  return true;
}

DataRate signalling_rate(const PcieParams& p) {
  return DataRate::bps(lane_rate(p.gen) * p.lanes);
}

DataRate raw_bandwidth(const PcieParams& p) {
  const Ratio e = encoding(p.gen);
  const Int128 num = static_cast<Int128>(signalling_rate(p).bits_per_second()) * e.num;
  return DataRate::bps(static_cast<std::int64_t>(num / e.den));
}

Bytes tlp_overhead(const PcieParams& p) {
  constexpr std::int64_t kHeader = 16;  // 4DW request header, 64-bit address
  constexpr std::int64_t kFraming = 8;  // STP token 4 B + LCRC 4 B (Gen3-5 only)
  return Bytes(flit_mode(p.gen) ? kHeader : kHeader + kFraming);
}

DataRate effective_bandwidth(const PcieParams& p) {
  // From the signalling rate in one step, so the only rounding is the final one.
  const Ratio e = encoding(p.gen);
  const std::int64_t mps = p.max_payload.count();
  const Int128 num = static_cast<Int128>(signalling_rate(p).bits_per_second()) * e.num * mps;
  const Int128 den = static_cast<Int128>(e.den) * (mps + tlp_overhead(p).count());
  return DataRate::bps(static_cast<std::int64_t>(num / den));
}

SimTime transfer_time(const PcieParams& p, Bytes size) {
  if (size.count() <= 0) return SimTime::zero();
  const std::int64_t tlps = ceil_div(size.count(), p.max_payload.count());
  return raw_bandwidth(p).serialization_time(Bytes(size.count() + tlps * tlp_overhead(p).count()));
}

std::int64_t read_request_count(const PcieParams& p, Bytes size) {
  if (size.count() <= 0) return 0;
  return ceil_div(size.count(), p.max_read_request.count());
}

PcieParams degrade(PcieParams p, int gen) {
  p.gen = std::clamp(gen, kMinGen, std::max(kMinGen, p.gen));
  p.auto_size = false;
  return p;
}

PcieParams size_for_port(PcieParams base, DataRate port_rate) {
  if (!base.auto_size) return base;
  constexpr std::pair<int, int> kCandidates[] = {{5, 16}, {6, 16}, {6, 32}, {7, 32}};
  for (const auto& [gen, lanes] : kCandidates) {
    base.gen = gen;
    base.lanes = lanes;
    if (effective_bandwidth(base) >= port_rate) break;  // else the last candidate stays
  }
  return base;
}

std::string describe(const PcieParams& p) {
  char buf[96];
  const double gbytes = static_cast<double>(effective_bandwidth(p).bits_per_second()) / 8e9;
  std::snprintf(buf, sizeof buf, "Gen%d x%d (%.1f GB/s effective)", p.gen, p.lanes, gbytes);
  return buf;
}

std::string link_name(const PcieParams& p) {
  return "gen" + std::to_string(p.gen) + "x" + std::to_string(p.lanes);
}

Result<PcieParams> parse_pcie(const std::string& text, PcieParams base) {
  std::string s = text;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "auto") {
    base.auto_size = true;
    return base;
  }
  const auto malformed = [&] {
    return Error{"PCIe link '" + text + "' is not understood (" + link_forms() + ")"};
  };
  if (s.rfind("gen", 0) != 0) return malformed();
  const char* const end = s.data() + s.size();
  int gen = 0;
  int lanes = 0;
  auto [after_gen, ec1] = std::from_chars(s.data() + 3, end, gen);
  if (ec1 != std::errc() || after_gen == end || *after_gen != 'x') return malformed();
  auto [after_lanes, ec2] = std::from_chars(after_gen + 1, end, lanes);
  if (ec2 != std::errc() || after_lanes != end) return malformed();
  base.gen = gen;
  base.lanes = lanes;
  base.auto_size = false;
  if (auto r = base.validate(); !r) {
    return Error{"PCIe link '" + text + "': " + r.error().message + " (" + link_forms() + ")"};
  }
  return base;
}

}  // namespace stepsim::nic
