// Per-packet spraying: consecutive packets leave on consecutive equal-cost ports (round robin per
// switch), so every uplink carries the same share. Packets of a flow arrive out of order; the
// receiver must place them directly (selective repeat), which the RDMA layer models.
#include "src/fabric/lb_registry.hpp"

namespace stepsim::fabric {
namespace {

class Spray final : public LoadBalancer {
 public:
  std::uint32_t choose(const LbQuery& q) override {
    return next_++ % static_cast<std::uint32_t>(q.candidates.size());
  }

 private:
  std::uint32_t next_ = 0;
};

const LbRegistration kSpray{
    "spray",
    [](const LbParams&, std::uint32_t) { return std::make_unique<Spray>(); },
    "per packet, round robin over the equal-cost ports",
    {},
    LbTraits{.reorders = true}};

}  // namespace
}  // namespace stepsim::fabric
