// Flowlet switching in the style of LetFlow (Vanini et al., NSDI 2017): a flow keeps its port
// while its packets follow each other closely; after an idle gap longer than the timeout the next
// packet starts a new flowlet on a randomly chosen port. Like hardware, the flow table is a fixed
// array indexed by the flow hash (colliding flows share an entry).
#include <vector>

#include "src/fabric/lb_registry.hpp"
#include "stepsim/pdes/rng.hpp"

namespace stepsim::fabric {
namespace {

class Flowlet final : public LoadBalancer {
 public:
  Flowlet(const LbParams& p, std::uint32_t switch_id)
      : timeout_(p.flowlet_timeout),
        table_(p.flowlet_table > 0 ? p.flowlet_table : 1),
        rng_(p.seed, switch_id, /*stream=*/0x466c6f77u) {}

  std::uint32_t choose(const LbQuery& q) override {
    const auto n = static_cast<std::uint32_t>(q.candidates.size());
    Entry& e = table_[ecmp_hash(q.packet, 0) % table_.size()];
    if (!e.used || q.now - e.last > timeout_ || e.choice >= n) {
      e.choice = rng_.below(n);
      e.used = true;
    }
    e.last = q.now;
    return e.choice;
  }

  [[nodiscard]] std::size_t memory_bytes() const override {
    return table_.capacity() * sizeof(Entry);
  }

 private:
  struct Entry {
    SimTime last;
    std::uint32_t choice = 0;
    bool used = false;
  };
  SimTime timeout_;
  std::vector<Entry> table_;
  pdes::Rng rng_;
};

const LbRegistration kFlowlet{
    "flowlet",
    [](const LbParams& p, std::uint32_t sw) { return std::make_unique<Flowlet>(p, sw); },
    "LetFlow: a new random port after an idle gap (4,096-entry hashed flow table)",
    {"fabric.flowlet_timeout"}};

}  // namespace
}  // namespace stepsim::fabric
