// ECMP: a static hash of the packet's 5-tuple (and IPv6 flow label) picks the port, so every
// packet of a flow takes one path. With RoCE's fixed destination port, path diversity comes only
// from the per-QP UDP source port or flow label (DOMAIN.md section 5); without it, all QPs of a
// host pair collide ("hash polarization"). Each switch salts the hash with its id by default, as
// operators configure to avoid correlated choices across tiers.
#include "src/fabric/lb_registry.hpp"

namespace stepsim::fabric {
namespace {

class Ecmp final : public LoadBalancer {
 public:
  Ecmp(const LbParams& p, std::uint32_t switch_id)
      : seed_(p.per_switch_seed ? 0x9E3779B9u * (switch_id + 1) : 0x9E3779B9u) {}
  std::uint32_t choose(const LbQuery& q) override {
    return ecmp_hash(q.packet, seed_) % static_cast<std::uint32_t>(q.candidates.size());
  }

 private:
  std::uint32_t seed_;
};

const LbRegistration kEcmp{
    "ecmp", [](const LbParams& p, std::uint32_t sw) { return std::make_unique<Ecmp>(p, sw); },
    "a static hash of the 5-tuple and flow label, salted per switch: one path per flow"};

}  // namespace
}  // namespace stepsim::fabric
