// METIS partition (Karypis & Kumar, multilevel k-way) of the LP graph: vertex weights are the
// expected load of each LP, edge weights the expected traffic on each channel, so that cut
// traffic is minimised under a load-balance constraint. Deterministic: fixed seed, and every rank
// computes the same partition. An implicit all-to-all graph (PHOLD) has no structure to exploit,
// and a graph with fewer LPs than parts cannot be cut; both fall back to the block partition.
#include <metis.h>

#include "src/pdes/partition_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {
namespace {

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
    return owner;
  }
};

const PartitionerRegistration kMetis{"metis", [] { return std::make_unique<MetisPartitioner>(); }};

}  // namespace
}  // namespace stepsim::pdes
