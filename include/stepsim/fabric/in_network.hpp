#pragma once
/// In-network computing on the switches (SHARP-style aggregation): the seam between the fabric
/// and a switch-side agent. Packets marked Packet::in_network that reach a switch go to the
/// agent instead of being routed; the agent sends what it produces through
/// FabricModel::emit_from_switch, onto an egress queue of that switch (with the queue's PFC, ECN
/// and buffer accounting). Without an agent such packets are dropped as unroutable.

#include <cstdint>
#include <span>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/pdes/model.hpp"

namespace stepsim::fabric {

class FabricModel;

class InNetworkAgent {
 public:
  virtual ~InNetworkAgent() = default;
  /// Called from FabricModel::setup with the rank's LPs (servers and switches, ascending).
  virtual void setup(FabricModel& fabric, std::span<const pdes::LpId> local_lps) = 0;
  /// An in-network packet arrived at port `in_port` of the switch being run, at ctx.now().
  virtual void on_packet(pdes::LpContext& ctx, std::uint32_t in_port, const Packet& pkt) = 0;
  /// A hash of a local switch's final agent state (part of the run digest).
  [[nodiscard]] virtual std::uint64_t digest(pdes::LpId node) const = 0;
};

}  // namespace stepsim::fabric
