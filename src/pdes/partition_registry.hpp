#pragma once
// Self-registration of partitioners: one `const PartitionerRegistration kX{"name", factory};`
// line in the partitioner's own file adds it to make_partitioner().

#include <functional>
#include <memory>
#include <string>

#include "stepsim/pdes/partition.hpp"

namespace stepsim::pdes {

using PartitionerFactory = std::function<std::unique_ptr<Partitioner>()>;

struct PartitionerRegistration {
  PartitionerRegistration(std::string name, PartitionerFactory factory);
};

}  // namespace stepsim::pdes
