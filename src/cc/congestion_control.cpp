#include "stepsim/cc/congestion_control.hpp"

#include "src/cc/cc_registry.hpp"

namespace stepsim::cc {

Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   DataRate line_rate) {
  return CcRegistry::create("congestion control", p.algorithm, p, line_rate);
}

std::vector<std::string> congestion_control_names() {
  return CcRegistry::names();
}

}  // namespace stepsim::cc
