#pragma once
/// What runs inside the servers above their NIC ports: the seam between the fabric and the RDMA
/// layer. Without a host model the fabric's servers send its raw test flows; with one, the fabric
/// asks the host model for the next packet whenever a NIC port is free and hands it every packet
/// that arrives at a server. Host models own the event kinds from kHostEventBase up.

#include <cstdint>
#include <span>

#include "stepsim/fabric/packet.hpp"
#include "stepsim/pdes/model.hpp"

namespace stepsim::fabric {

class FabricModel;

/// Event kinds at or above this value are delivered to HostModel::on_event.
inline constexpr std::uint32_t kHostEventBase = 64;

class HostModel {
 public:
  virtual ~HostModel() = default;
  /// Called from FabricModel::setup with the rank's LPs (servers and switches, ascending).
  virtual void setup(FabricModel& fabric, std::span<const pdes::LpId> local_lps) = 0;
  /// Called once per local server at time 0.
  virtual void init_server(pdes::LpContext& ctx) = 0;
  /// NIC port `nic` (port index within the server) is free at ctx.now(): the packet to put on the
  /// wire now, if any. While `lossless_paused`, only packets of a lossy class may be returned.
  /// A host model that has nothing ready now calls FabricModel::wake when it has.
  virtual bool next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool lossless_paused,
                           Packet& out) = 0;
  /// A packet arrived at NIC port `nic` of this server at ctx.now().
  virtual void on_packet(pdes::LpContext& ctx, std::uint32_t nic, const Packet& pkt) = 0;
  /// One of the host model's own events (kind >= kHostEventBase) at a server.
  virtual void on_event(pdes::LpContext& ctx, const pdes::Event& ev) = 0;
  /// A hash of a local server's final host state (part of the run digest).
  [[nodiscard]] virtual std::uint64_t digest(pdes::LpId server) const = 0;
};

}  // namespace stepsim::fabric
