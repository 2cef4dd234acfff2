// Block partition: LP ids in contiguous blocks of (nearly) equal summed vertex weight. Cheap,
// deterministic, and good whenever LP ids follow locality (topology generators number servers
// of a leaf together); the baseline METIS is compared with.
#include "src/pdes/partition_registry.hpp"

namespace stepsim::pdes {
namespace {

class BlockPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string name() const override { return "block"; }
  [[nodiscard]] std::vector<int> partition(const LpGraph& graph, int parts) const override {
    const LpId n = graph.size();
    std::vector<int> owner(n, 0);
    std::int64_t total = 0;
    for (LpId v = 0; v < n; ++v) total += graph.vertex_weight(v);
    // LP v goes to the part its weight midpoint falls in: balanced and contiguous.
    std::int64_t before = 0;
    for (LpId v = 0; v < n; ++v) {
      const std::int64_t w = graph.vertex_weight(v);
      const Int128 mid2 = static_cast<Int128>(2 * before + w) * parts;
      const Int128 denom = static_cast<Int128>(2) * (total > 0 ? total : 1);
      owner[v] = total > 0 ? static_cast<int>(std::min<Int128>(mid2 / denom, parts - 1))
                           : static_cast<int>(static_cast<std::int64_t>(v) * parts / n);
      before += w;
    }
    return owner;
  }
};

const PartitionerRegistration kBlock{
    "block", [] { return std::make_unique<BlockPartitioner>(); },
    "contiguous blocks of LP ids of nearly equal load (topologies number neighbours together)"};

}  // namespace
}  // namespace stepsim::pdes
