#include "stepsim/cc/congestion_control.hpp"

#include "src/cc/cc_registry.hpp"

namespace stepsim::cc {

Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   const CcPath& path) {
  return CcRegistry::create("congestion control", p.algorithm, p, path);
}

std::vector<std::string> congestion_control_names() {
  return CcRegistry::names();
}

}  // namespace stepsim::cc
