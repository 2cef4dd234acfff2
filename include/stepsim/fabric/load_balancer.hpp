#pragma once
/// Load balancing at a switch: which of the equal-cost egress ports a packet takes. One file per
/// policy (src/fabric/lb_*.cpp), chosen by its registered name (`stepsim list lb`).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stepsim/core/registry.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/fabric/packet.hpp"

namespace stepsim::fabric {

/// Parameters shared by the policies (each uses what it needs).
struct LbParams {
  std::string policy = "ecmp";
  SimTime flowlet_timeout = SimTime::us(10);  ///< flowlet: idle gap that may start a new path
  std::uint32_t flowlet_table = 4096;         ///< flowlet: entries of the (hashed) flow table
  bool per_switch_seed = true;                ///< ecmp: each switch hashes with its own seed
  std::uint32_t seed = 1;                     ///< run seed (random choices)
};

/// What a policy sees for one decision.
struct LbQuery {
  const Packet& packet;
  std::span<const std::uint32_t> candidates;  ///< usable equal-cost ports (indices in the switch)
  SimTime now;
  const std::int64_t* queued_bytes;  ///< bytes waiting at each egress port of the switch
};

/// What a policy declares at its registration (src/fabric/lb_registry.hpp).
struct LbTraits {
  /// It may send consecutive packets of one flow on different equal-cost paths while the
  /// earlier ones are still on their way, so they can arrive out of order (a per-packet
  /// policy). transport.retransmission=auto then runs selective repeat.
  bool reorders = false;
  /// "reorders: ..." for `stepsim list lb`.
  [[nodiscard]] std::vector<std::string> words() const;
};

/// A policy instance lives in one switch and may keep state there.
class LoadBalancer {
 public:
  using Traits = LbTraits;
  virtual ~LoadBalancer() = default;
  /// Returns an index into q.candidates (which is never empty).
  virtual std::uint32_t choose(const LbQuery& q) = 0;
  /// Bytes of state beyond the object itself (a flowlet table).
  [[nodiscard]] virtual std::size_t memory_bytes() const { return 0; }
};

/// Creates the policy `p.policy` for switch `switch_id`; the error lists the known policies.
Result<std::unique_ptr<LoadBalancer>> make_load_balancer(const LbParams& p,
                                                         std::uint32_t switch_id);
/// Whether `policy` declared that it reorders a flow's packets (LbTraits::reorders): the RDMA
/// transport then places out of order (selective repeat). False for an unknown name.
bool lb_reorders(const std::string& policy);
/// Names of the registered policies.
std::vector<std::string> load_balancer_names();
/// Every policy's description and parameter keys (fabric.*), by name.
std::vector<RegistryInfo> load_balancers();

/// CRC-32 over a RoCEv2 packet's 5-tuple (source and destination address, UDP source port,
/// destination port 4791, protocol 17) and IPv6 flow label (0 when unused).
std::uint32_t tuple_hash(std::uint32_t src_addr, std::uint32_t dst_addr, std::uint16_t udp_sport,
                         std::uint32_t flow_label);

/// The ECMP hash a switch computes: the packet's tuple hash salted with the switch's `seed`
/// through a bijective mixer (switches of different tiers use different seeds, so their choices
/// are not correlated).
inline std::uint32_t ecmp_hash(const Packet& p, std::uint32_t seed) {
  std::uint64_t x = (static_cast<std::uint64_t>(seed) << 32) | p.tuple_hash;
  x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdULL;
  x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ULL;
  return static_cast<std::uint32_t>(x ^ (x >> 33));
}

/// The IPv6 flow label a RoCE NIC derives per QP (DOMAIN.md section 5): the low 20 bits of
/// CRC-32 over source QP, destination QP and the low 16 bits of source and destination address.
std::uint32_t roce_flow_label(std::uint32_t src_qp, std::uint32_t dst_qp, std::uint32_t src_addr,
                              std::uint32_t dst_addr);

}  // namespace stepsim::fabric
