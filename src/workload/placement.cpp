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

std::vector<std::uint32_t> Placement::ep_group(int stage, int etp, int ep) const {
  std::vector<std::uint32_t> g;
  for (int e = 0; e < ep; ++e)
    g.push_back(rank(0, 0, 0, stage) + static_cast<std::uint32_t>(e * etp));
  return g;
}

std::vector<std::uint32_t> Placement::etp_group(int stage, int etp) const {
  return ep_group(stage, 1, etp);
}

std::vector<std::uint32_t> Placement::expert_dp_group(int stage, int etp, int ep, int edp) const {
  return ep_group(stage, etp * ep, edp);
}

}  // namespace stepsim::workload
