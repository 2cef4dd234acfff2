// Port rates from SerDes parameters. Lane rates follow IEEE 802.3 (25.78125 GBd NRZ for 100G-R4,
// 26.5625/53.125/106.25 GBd PAM4 for 50/100/200G lanes) and the IB rates of the Linux kernel's
// ib_verbs (NDR 4x 425,000 Mb/s, XDR 4x 850,000 Mb/s signalling; validation/fabric.md L1).
// FEC parity is removed as k/n of the code; RS-FEC ports carry 256b/257b transcoded data.
#include "stepsim/phy/port_rate.hpp"

#include <algorithm>

namespace stepsim::phy {

int bits_per_symbol(Modulation m) {
  return m == Modulation::kPam4 ? 2 : 1;
}

DataRate PortSpec::signalling_rate() const {
  return DataRate::bps(static_cast<std::int64_t>(lanes) * baud * bits_per_symbol(modulation));
}

DataRate PortSpec::data_rate() const {
  Int128 num = static_cast<Int128>(signalling_rate().bits_per_second());
  Int128 den = 1;
  switch (fec) {
    case FecKind::kNone:
      break;
    case FecKind::kRs528:
      num *= 514;
      den *= 528;
      break;
    case FecKind::kRs544:
      num *= 514;
      den *= 544;
      break;
  }
  switch (coding) {
    case LineCoding::kNone:
      break;
    case LineCoding::k64b66b:
      num *= 64;
      den *= 66;
      break;
    case LineCoding::k256b257b:
      num *= 256;
      den *= 257;
      break;
  }
  return DataRate::bps(static_cast<std::int64_t>(num / den));
}

PortSpec PortSpec::with_lanes(int lanes_left) const {
  PortSpec p = *this;
  p.lanes = std::max(1, lanes_left);
  return p;
}

namespace {

struct Standard {
  const char* name;
  int lanes;
  std::int64_t baud;
  Modulation mod;
  FecKind fec;
};

constexpr Standard kStandards[] = {
    {"100G", 4, 25'781'250'000, Modulation::kNrz, FecKind::kRs528},
    {"200G", 4, 26'562'500'000, Modulation::kPam4, FecKind::kRs544},
    {"400G", 4, 53'125'000'000, Modulation::kPam4, FecKind::kRs544},
    {"800G", 8, 53'125'000'000, Modulation::kPam4, FecKind::kRs544},
    {"1.6T", 8, 106'250'000'000, Modulation::kPam4, FecKind::kRs544},
    {"NDR", 4, 53'125'000'000, Modulation::kPam4, FecKind::kRs544},
    {"XDR", 4, 106'250'000'000, Modulation::kPam4, FecKind::kRs544},
};

}  // namespace

std::vector<std::string> standard_port_names() {
  std::vector<std::string> names;
  for (const Standard& s : kStandards) names.emplace_back(s.name);
  return names;
}

Result<PortSpec> standard_port(std::string_view name) {
  for (const Standard& s : kStandards) {
    if (name == s.name) {
      return PortSpec{s.name, s.lanes, s.baud, s.mod, s.fec, LineCoding::k256b257b};
    }
  }
  std::string known;
  for (const auto& n : standard_port_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown port type '" + std::string(name) + "' (allowed: " + known + ")"};
}

}  // namespace stepsim::phy
