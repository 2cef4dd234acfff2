#pragma once
// Self-registration of congestion-control algorithms (one line in each src/cc/*.cpp).

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/core/registry.hpp"

namespace stepsim::cc {

using CcRegistry = Registry<CongestionControl, const CcParams&, const CcPath&>;
using CcRegistration = Registration<CcRegistry>;

}  // namespace stepsim::cc
