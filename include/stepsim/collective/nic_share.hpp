#pragma once
/// NIC bandwidth per GPU when GPUs share NICs (topology/nic_map.hpp).

#include "stepsim/collective/collective.hpp"

namespace stepsim::collective {

/// NIC bandwidth per GPU, as a share of one NIC: the distinct NICs of the first server's members
/// over its members, at most 1 (8 GPUs on 2 NICs: 1/4; one NIC per GPU: 1). The tuner prices
/// each GPU at this share of a NIC's goodput.
double nic_share(const Communicator& comm);

}  // namespace stepsim::collective
