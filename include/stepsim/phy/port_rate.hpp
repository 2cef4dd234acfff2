#pragma once
/// Port data rates from the physical layer: lanes x baud x bits per symbol, less the FEC and
/// line-coding overheads (DOMAIN.md section 1). Exact integer arithmetic.

#include <string>
#include <string_view>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::phy {

enum class Modulation { kNrz, kPam4 };
enum class FecKind { kNone, kRs528, kRs544 };  ///< none, KR4 RS(528,514), KP4 RS(544,514)
enum class LineCoding { kNone, k64b66b, k256b257b };

/// Bits per symbol of a modulation (NRZ 1, PAM4 2).
int bits_per_symbol(Modulation m);

/// The electrical/optical make-up of a port.
struct PortSpec {
  std::string name;  ///< e.g. "1.6T"
  int lanes = 8;
  std::int64_t baud = 106'250'000'000;  ///< symbols per second per lane
  Modulation modulation = Modulation::kPam4;
  FecKind fec = FecKind::kRs544;
  LineCoding coding = LineCoding::k256b257b;

  /// Raw signalling rate: lanes x baud x bits per symbol (IB's "signalling rate").
  [[nodiscard]] DataRate signalling_rate() const;
  /// MAC data rate after FEC parity and line coding, rounded down to a whole bit/s.
  [[nodiscard]] DataRate data_rate() const;
  /// The same port with `lost` lanes down (a lane-loss fault); at least one lane stays.
  [[nodiscard]] PortSpec with_lanes(int lanes_left) const;
};

/// A named standard port: "100G", "200G", "400G", "800G", "1.6T" (Ethernet), "NDR", "XDR" (IB).
Result<PortSpec> standard_port(std::string_view name);
/// Names accepted by standard_port().
std::vector<std::string> standard_port_names();

}  // namespace stepsim::phy
