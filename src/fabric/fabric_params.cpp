#include "stepsim/fabric/fabric_params.hpp"

namespace stepsim::fabric {

Result<bool> FabricParams::validate() const {
  if (sw.buffer.count() <= 0) return Error{"switch buffer must be positive"};
  if (!(sw.dt_alpha > 0)) return Error{"switch dt_alpha must be positive"};
  if (ecn.enabled && !(ecn.kmin < ecn.kmax)) {
    return Error{"ECN needs kmin < kmax (got " + to_string(ecn.kmin) + ", " + to_string(ecn.kmax) +
                 ")"};
  }
  if (!(ecn.pmax >= 0 && ecn.pmax <= 1)) return Error{"ECN pmax must be in [0, 1]"};
  if (pfc.enabled && !(pfc.xon < pfc.xoff)) {
    return Error{"PFC needs xon < xoff (got " + to_string(pfc.xon) + ", " + to_string(pfc.xoff) +
                 ")"};
  }
  if (pfc.priority > 7) return Error{"PFC priority must be 0..7"};
  if (mtu.count() < 64 || mtu.count() > 65536) return Error{"mtu must be 64..65536 bytes"};
  if (burst_symbols < 1 || burst_symbols > 15) return Error{"burst_symbols must be 1..15"};
  if (ber_override > 0.5) return Error{"BER must be at most 0.5"};
  for (double b : lane_ber) {
    if (!(b >= 0 && b <= 0.5)) return Error{"every lane BER must be in [0, 0.5]"};
  }
  if (routing != "minimal" && routing != "valiant") {
    return Error{"unknown routing '" + routing + "' (allowed: minimal, valiant)"};
  }
  return true;
}

void add_flapping(std::vector<FaultSpec>& faults, std::uint32_t link, SimTime start, SimTime period,
                  SimTime down_for, int times) {
  for (int i = 0; i < times; ++i) {
    const SimTime t = start + period * i;
    faults.push_back({FaultSpec::Kind::kDown, link, t, 0});
    faults.push_back({FaultSpec::Kind::kUp, link, t + down_for, 0});
  }
}

}  // namespace stepsim::fabric
