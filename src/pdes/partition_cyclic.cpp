// Cyclic partition: LP v goes to part v mod parts. Neighbouring LPs (the servers of one leaf, the
// members of one collective group) land on different ranks, so work that is busy at the same
// simulated time is spread over all ranks; the price is a larger cut.
#include "src/pdes/partition_registry.hpp"

namespace stepsim::pdes {
namespace {

class CyclicPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string name() const override { return "cyclic"; }
  [[nodiscard]] std::vector<int> partition(const LpGraph& graph, int parts) const override {
    std::vector<int> owner(graph.size(), 0);
    for (LpId v = 0; v < graph.size(); ++v)
      owner[v] = static_cast<int>(v % static_cast<LpId>(parts));
    return owner;
  }
};

const PartitionerRegistration kCyclic{
    "cyclic", [] { return std::make_unique<CyclicPartitioner>(); },
    "LP v on rank v mod ranks: spreads neighbours (busy at the same time) over all ranks"};

}  // namespace
}  // namespace stepsim::pdes
