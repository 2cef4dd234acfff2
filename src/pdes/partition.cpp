#include "stepsim/pdes/partition.hpp"

#include <algorithm>
#include <numeric>

#include "src/pdes/partition_registry.hpp"

namespace stepsim::pdes {
std::vector<std::string> partitioner_names() {
  return PartitionerRegistry::names();
}

std::vector<RegistryInfo> partitioners() {
  return PartitionerRegistry::infos();
}

Result<std::unique_ptr<Partitioner>> make_partitioner(const std::string& name) {
  return PartitionerRegistry::create("partitioner", name);
}

Result<PartitionQuality> evaluate_partition(const LpGraph& graph, const std::vector<int>& owner,
                                            int parts) {
  if (parts < 1) return Error{"a partition needs at least one part"};
  if (owner.size() != graph.size()) {
    return Error{"partition has " + std::to_string(owner.size()) + " entries for " +
                 std::to_string(graph.size()) + " LPs"};
  }
  PartitionQuality q;
  q.parts = parts;
  q.part_load.assign(static_cast<std::size_t>(parts), 0);
  std::vector<std::int64_t> members(static_cast<std::size_t>(parts), 0);
  for (LpId v = 0; v < graph.size(); ++v) {
    if (owner[v] < 0 || owner[v] >= parts) {
      return Error{"LP " + std::to_string(v) + " is assigned to part " + std::to_string(owner[v]) +
                   ", outside [0, " + std::to_string(parts) + ")"};
    }
    q.part_load[static_cast<std::size_t>(owner[v])] += graph.vertex_weight(v);
    ++members[static_cast<std::size_t>(owner[v])];
    for (const LpEdge& e : graph.neighbours(v)) {
      if (e.to < v) continue;
      q.total_weight += e.weight;
      if (owner[e.to] != owner[v]) {
        ++q.cut_edges;
        q.cut_weight += e.weight;
      }
    }
  }
  if (static_cast<std::int64_t>(graph.size()) >= parts) {
    for (int p = 0; p < parts; ++p) {
      if (members[static_cast<std::size_t>(p)] == 0) {
        return Error{"part " + std::to_string(p) + " owns no LP although there are " +
                     std::to_string(graph.size()) + " LPs for " + std::to_string(parts) + " parts"};
      }
    }
  }
  const std::int64_t total =
      std::accumulate(q.part_load.begin(), q.part_load.end(), std::int64_t{0});
  const std::int64_t max_load = *std::max_element(q.part_load.begin(), q.part_load.end());
  q.imbalance =
      total > 0 ? static_cast<double>(max_load) * parts / static_cast<double>(total) : 1.0;
  return q;
}

}  // namespace stepsim::pdes
