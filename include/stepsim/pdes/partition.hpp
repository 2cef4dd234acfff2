#pragma once
/// Partitioning of LPs onto ranks: an interface, a registry by name, and a quality report.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/core/registry.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/pdes/lp_graph.hpp"

namespace stepsim::pdes {

/// Assigns every LP a part (rank) in [0, parts). Must be deterministic: every rank computes the
/// partition itself and all must agree.
class Partitioner {
 public:
  virtual ~Partitioner() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::vector<int> partition(const LpGraph& graph, int parts) const = 0;
};

/// Creates a partitioner by name ("block", "metis"); the error lists the known names.
Result<std::unique_ptr<Partitioner>> make_partitioner(const std::string& name);
/// Names of the registered partitioners.
std::vector<std::string> partitioner_names();
/// Every partitioner's description, by name.
std::vector<RegistryInfo> partitioners();

/// How good a partition is.
struct PartitionQuality {
  int parts = 0;
  std::int64_t cut_edges = 0;     ///< undirected edges whose ends are on different parts
  std::int64_t cut_weight = 0;    ///< their summed traffic weight
  std::int64_t total_weight = 0;  ///< summed traffic weight of all edges
  double imbalance = 1.0;         ///< max part load / mean part load (vertex weights)
  std::vector<std::int64_t> part_load;
};

/// Checks that `owner` is a valid partition (every LP owned by a part in range, no empty part
/// unless parts > LPs) and measures it. Returns an error describing the first problem.
Result<PartitionQuality> evaluate_partition(const LpGraph& graph, const std::vector<int>& owner,
                                            int parts);

}  // namespace stepsim::pdes
