#include "stepsim/pdes/sync.hpp"

#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {

void SerialSync::set_neighbours(std::span<const int> ranks) {
  STEPSIM_CHECK(ranks.empty(), "a serial run has no neighbour ranks");
}

void SerialSync::exchange(std::span<std::vector<Event>> out, std::vector<Event>&) {
  STEPSIM_CHECK(out.empty(), "a serial run sends no events to other ranks");
}

}  // namespace stepsim::pdes
