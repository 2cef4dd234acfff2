#pragma once
// Self-registration of partitioners: one `const PartitionerRegistration kX{"name", factory};`
// line in the partitioner's own file adds it to make_partitioner().

#include "stepsim/core/registry.hpp"
#include "stepsim/pdes/partition.hpp"

namespace stepsim::pdes {

using PartitionerRegistry = Registry<Partitioner>;
using PartitionerRegistration = Registration<PartitionerRegistry>;

}  // namespace stepsim::pdes
