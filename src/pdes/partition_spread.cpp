// Spread partition: every window's events split evenly over the ranks. A window of a training
// step is busy where some servers talk (one pipeline stage's collective, say) and at the switches
// their traffic crosses, and a switch forwarding a cell commits about as many events as the two
// servers sending and receiving it (a leaf's events are 0.54-0.56 of its servers' on GPT-3's
// whole step). Switches go round-robin over the ranks; then the servers of each group (those
// attached to the same switches: one leaf's, or one rail group's across the planes), in id
// order, each to the rank with the least load so far in its group, where a rank's load counts
// the servers placed there and, for each server placed, its attached switches' share of their
// weight. Any run of consecutive servers of a group (a stage: topologies number a job's servers
// together) so splits with its switches evenly; `cyclic` ignores the switches' events.
#include <algorithm>
#include <map>

#include "src/pdes/partition_registry.hpp"

namespace stepsim::pdes {
namespace {

class SpreadPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string name() const override { return "spread"; }
  [[nodiscard]] std::vector<int> partition(const LpGraph& graph, int parts) const override {
    const LpId n = graph.size();
    std::vector<int> owner(n, 0);
    if (parts <= 1) return owner;
    // Switches round-robin, counting switches only; each one's edge weight to endpoints.
    std::vector<double> to_endpoints(n, 0.0);
    int next = 0;
    for (LpId v = 0; v < n; ++v) {
      if (graph.vertex_tier(v) == 0) continue;
      owner[v] = next;
      next = (next + 1) % parts;
      for (const LpEdge& e : graph.neighbours(v)) {
        if (graph.vertex_tier(e.to) == 0) to_endpoints[v] += static_cast<double>(e.weight);
      }
    }
    // Endpoints by group, in id order: least group load first, then least total, then lowest.
    std::map<std::vector<LpId>, std::vector<double>> groups;
    std::vector<double> total(static_cast<std::size_t>(parts), 0.0);
    std::vector<LpId> key;
    for (LpId v = 0; v < n; ++v) {
      if (graph.vertex_tier(v) != 0) continue;
      key.clear();
      for (const LpEdge& e : graph.neighbours(v)) {
        if (graph.vertex_tier(e.to) != 0) key.push_back(e.to);
      }
      std::vector<double>& load =
          groups.try_emplace(key, static_cast<std::size_t>(parts), 0.0).first->second;
      for (const LpEdge& e : graph.neighbours(v)) {
        if (graph.vertex_tier(e.to) == 0 || to_endpoints[e.to] <= 0) continue;
        const double share = static_cast<double>(graph.vertex_weight(e.to)) *
                             static_cast<double>(e.weight) / to_endpoints[e.to];
        load[static_cast<std::size_t>(owner[e.to])] += share;
        total[static_cast<std::size_t>(owner[e.to])] += share;
      }
      std::size_t best = 0;
      for (std::size_t p = 1; p < load.size(); ++p) {
        if (load[p] < load[best] || (load[p] == load[best] && total[p] < total[best])) best = p;
      }
      const auto w = static_cast<double>(std::max<std::int64_t>(1, graph.vertex_weight(v)));
      load[best] += w;
      total[best] += w;
      owner[v] = static_cast<int>(best);
    }
    return owner;
  }
};

const PartitionerRegistration kSpread{
    "spread", [] { return std::make_unique<SpreadPartitioner>(); },
    "switches round-robin, each switch's servers placed to balance its events with theirs: every "
    "window's traffic splits evenly (the whole step's default)"};

}  // namespace
}  // namespace stepsim::pdes
