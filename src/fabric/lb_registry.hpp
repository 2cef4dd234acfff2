#pragma once
// Self-registration of load-balancing policies (one line in each lb_*.cpp).

#include "stepsim/core/registry.hpp"
#include "stepsim/fabric/load_balancer.hpp"

namespace stepsim::fabric {

using LbRegistry = Registry<LoadBalancer, const LbParams&, std::uint32_t>;
using LbRegistration = Registration<LbRegistry>;

}  // namespace stepsim::fabric
