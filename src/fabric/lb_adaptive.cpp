// Adaptive routing: each packet takes the equal-cost port with the fewest bytes queued, as
// switch-local adaptive routing does (it sees only its own queues, not the downstream ones).
// Ties are broken starting from the flow's ECMP choice, so an idle fabric behaves like ECMP.
#include "src/fabric/lb_registry.hpp"

namespace stepsim::fabric {
namespace {

class Adaptive final : public LoadBalancer {
 public:
  explicit Adaptive(std::uint32_t switch_id) : seed_(0x85EBCA6Bu * (switch_id + 1)) {}
  std::uint32_t choose(const LbQuery& q) override {
    const auto n = static_cast<std::uint32_t>(q.candidates.size());
    const std::uint32_t start = ecmp_hash(q.packet, seed_) % n;
    std::uint32_t best = start;
    std::int64_t best_bytes = q.queued_bytes[q.candidates[start]];
    for (std::uint32_t i = 1; i < n; ++i) {
      const std::uint32_t c = (start + i) % n;
      const std::int64_t b = q.queued_bytes[q.candidates[c]];
      if (b < best_bytes) {
        best = c;
        best_bytes = b;
      }
    }
    return best;
  }

 private:
  std::uint32_t seed_;
};

const LbRegistration kAdaptive{
    "adaptive",
    [](const LbParams&, std::uint32_t sw) { return std::make_unique<Adaptive>(sw); },
    "per packet, the equal-cost port with the fewest bytes queued at this switch",
    {},
    LbTraits{.reorders = true}};

}  // namespace
}  // namespace stepsim::fabric
