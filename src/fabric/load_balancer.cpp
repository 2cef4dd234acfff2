#include "stepsim/fabric/load_balancer.hpp"

#include <array>

#include "src/fabric/lb_registry.hpp"
#include "stepsim/core/crc32.hpp"

namespace stepsim::fabric {
namespace {

void put32(std::uint8_t* at, std::uint32_t v) {
  at[0] = static_cast<std::uint8_t>(v >> 24);
  at[1] = static_cast<std::uint8_t>(v >> 16);
  at[2] = static_cast<std::uint8_t>(v >> 8);
  at[3] = static_cast<std::uint8_t>(v);
}

}  // namespace

Result<std::unique_ptr<LoadBalancer>> make_load_balancer(const LbParams& p,
                                                         std::uint32_t switch_id) {
  return LbRegistry::create("load-balancing policy", p.policy, p, switch_id);
}

std::vector<std::string> LbTraits::words() const {
  if (!reorders) return {};
  return {"reorders: transport.retransmission=auto uses selective repeat"};
}

bool lb_reorders(const std::string& policy) {
  const LbTraits* t = LbRegistry::traits(policy);
  return t != nullptr && t->reorders;
}

std::vector<std::string> load_balancer_names() {
  return LbRegistry::names();
}

std::vector<RegistryInfo> load_balancers() {
  return LbRegistry::infos();
}

std::uint32_t tuple_hash(std::uint32_t src_addr, std::uint32_t dst_addr, std::uint16_t udp_sport,
                         std::uint32_t flow_label) {
  std::array<std::uint8_t, 17> key{};
  put32(key.data(), src_addr);
  put32(key.data() + 4, dst_addr);
  key[8] = static_cast<std::uint8_t>(udp_sport >> 8);
  key[9] = static_cast<std::uint8_t>(udp_sport);
  key[10] = static_cast<std::uint8_t>(kRoceUdpPort >> 8);
  key[11] = static_cast<std::uint8_t>(kRoceUdpPort & 0xff);
  key[12] = 17;  // UDP
  put32(key.data() + 13, flow_label);
  return crc32(key);
}

std::uint32_t roce_flow_label(std::uint32_t src_qp, std::uint32_t dst_qp, std::uint32_t src_addr,
                              std::uint32_t dst_addr) {
  std::array<std::uint8_t, 12> key{};
  put32(key.data(), src_qp);
  put32(key.data() + 4, dst_qp);
  key[8] = static_cast<std::uint8_t>(src_addr >> 8);
  key[9] = static_cast<std::uint8_t>(src_addr);
  key[10] = static_cast<std::uint8_t>(dst_addr >> 8);
  key[11] = static_cast<std::uint8_t>(dst_addr);
  return crc32(key) & 0xFFFFFu;
}

}  // namespace stepsim::fabric
