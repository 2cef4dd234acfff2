// The communication groups of the simulated pipeline (see placement.hpp).
#include "stepsim/workload/placement.hpp"

namespace stepsim::workload {

std::vector<std::uint32_t> Placement::tp_group(int stage) const {
  std::vector<std::uint32_t> g;
  for (int t = 0; t < tp; ++t) g.push_back(rank(t, 0, 0, stage));
  return g;
}

std::vector<std::uint32_t> Placement::cp_group(int stage) const {
  std::vector<std::uint32_t> g;
  for (int c = 0; c < cp; ++c) g.push_back(rank(0, c, 0, stage));
  return g;
}

std::vector<std::uint32_t> Placement::dp_group(int stage, int stride, int count) const {
  std::vector<std::uint32_t> g;
  for (int d = 0; d < count; ++d) g.push_back(rank(0, 0, d * stride, stage));
  return g;
}

}  // namespace stepsim::workload
