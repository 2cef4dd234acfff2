// METIS partition (Karypis & Kumar, multilevel k-way) of the LP graph: vertex weights are the
// expected load of each LP, edge weights the expected traffic on each channel, so that cut
// traffic is minimised under a load-balance constraint. Deterministic: fixed seed, and every rank
// computes the same partition. An implicit all-to-all graph (PHOLD) has no structure to exploit,
// and a graph with fewer LPs than parts cannot be cut; both fall back to the block partition.
#include <metis.h>

#include <algorithm>

#include "src/pdes/partition_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {
namespace {

// With a few heavy LPs among many light ones (a collective on a few servers of a large fabric),
// METIS may leave a part empty; the engine needs every part to own an LP. Each empty part takes
// the lightest LP of the part with the most LPs (ties: the lowest id), deterministically.
void fill_empty_parts(const LpGraph& graph, std::vector<int>& owner, int parts) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(parts), 0);
  for (int p : owner) ++count[static_cast<std::size_t>(p)];
  for (int empty = 0; empty < parts; ++empty) {
    if (count[static_cast<std::size_t>(empty)] > 0) continue;
    const auto donor =
        static_cast<int>(std::max_element(count.begin(), count.end()) - count.begin());
    LpId pick = kNoLp;
    for (LpId v = 0; v < owner.size(); ++v) {
      if (owner[v] == donor &&
          (pick == kNoLp || graph.vertex_weight(v) < graph.vertex_weight(pick))) {
        pick = v;
      }
    }
    owner[pick] = empty;
    --count[static_cast<std::size_t>(donor)];
    ++count[static_cast<std::size_t>(empty)];
  }
}

class MetisPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string name() const override { return "metis"; }
  [[nodiscard]] std::vector<int> partition(const LpGraph& graph, int parts) const override {
    const LpId n = graph.size();
    if (parts <= 1 || graph.edge_count() == 0 || static_cast<std::int64_t>(n) <= parts) {
      return make_partitioner("block").value()->partition(graph, parts);
    }
    std::vector<idx_t> xadj(static_cast<std::size_t>(n) + 1, 0);
    std::vector<idx_t> adjncy;
    std::vector<idx_t> adjwgt;
    std::vector<idx_t> vwgt(n);
    adjncy.reserve(graph.edge_count() * 2);
    adjwgt.reserve(graph.edge_count() * 2);
    for (LpId v = 0; v < n; ++v) {
      vwgt[v] = static_cast<idx_t>(std::max<std::int64_t>(1, graph.vertex_weight(v)));
      for (const LpEdge& e : graph.neighbours(v)) {
        adjncy.push_back(static_cast<idx_t>(e.to));
        adjwgt.push_back(static_cast<idx_t>(std::max<std::int64_t>(1, e.weight)));
      }
      xadj[v + 1] = static_cast<idx_t>(adjncy.size());
    }
    idx_t nvtxs = static_cast<idx_t>(n);
    idx_t ncon = 1;
    idx_t nparts = parts;
    idx_t objval = 0;
    std::vector<idx_t> part(n, 0);
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 1;
    options[METIS_OPTION_CONTIG] = 0;
    const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(),
                                       nullptr, adjwgt.data(), &nparts, nullptr, nullptr, options,
                                       &objval, part.data());
    STEPSIM_CHECK(rc == METIS_OK, "METIS_PartGraphKway failed with code " + std::to_string(rc) +
                                      " on " + graph.name());
    std::vector<int> owner(n);
    for (LpId v = 0; v < n; ++v) owner[v] = static_cast<int>(part[v]);
    fill_empty_parts(graph, owner, parts);
    return owner;
  }
};

const PartitionerRegistration kMetis{
    "metis", [] { return std::make_unique<MetisPartitioner>(); },
    "METIS k-way: least expected cut traffic under a load balance (block when it cannot cut)"};

}  // namespace
}  // namespace stepsim::pdes
