#pragma once
/// RDMA NICs in every server: the host model that runs above the fabric's NIC ports.
///
/// Send side: a posted work request pays the software post, the PCIe doorbell, the QP-context
/// lookup (a miss reads the context over PCIe) and the WQE fetch (a PCIe read, shared by up to
/// `wqe_prefetch` WQEs posted together; none for BlueFlame inline). Its packets then pass packet
/// generation, the payload DMA (the memory kind's read latency, the translation cache, the PCIe
/// bandwidth) and the MAC. Each stage has a latency and an occupancy on its units, computed as
/// reservations on per-stage timelines (no event per stage); at most `tx_slots` packets are in
/// the pipeline, which is what keeps a long message at line rate (Little's law).
/// Receive side: per packet the "remote processing" stage and the PCIe write of the payload; a
/// completion becomes visible a CQE write later.
/// Transport: RC with PSNs, cumulative and coalesced ACKs, NAKs on a gap, a retransmission
/// strategy chosen by name (Go-Back-N or selective repeat), a retransmission timeout and a retry
/// limit (then ERROR), READ responses in the requester's PSN space, per-QP congestion control
/// (what it needs - CNPs, INT, an ACK per packet - declared by the algorithm) and pacing.
/// The pieces live in src/nic/ (docs/nic.md, "Code layout").

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/host_model.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/rdma_stats.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::nic {

class RcTransport;  // src/nic/rc_transport.hpp

/// The RDMA host model: adapts the RC transport to the fabric (HostModel) and to the application
/// (Verbs).
class RdmaHost final : public fabric::HostModel {
 public:
  /// `params` must be valid; `app` (may be null) must outlive the host.
  RdmaHost(NicParams params, std::vector<Connection> connections, RdmaApp* app);
  ~RdmaHost() override;

  void setup(fabric::FabricModel& fabric, std::span<const pdes::LpId> local_lps) override;
  void init_server(pdes::LpContext& ctx) override;
  bool next_packet(pdes::LpContext& ctx, std::uint32_t nic, bool lossless_paused,
                   fabric::Packet& out) override;
  void on_packet(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt) override;
  void on_event(pdes::LpContext& ctx, const pdes::Event& ev) override;
  [[nodiscard]] std::uint64_t digest(pdes::LpId server) const override;

  /// Gathers every rank's counters (collective over `sync`).
  [[nodiscard]] RdmaResults collect(pdes::Sync& sync) const;
  [[nodiscard]] const std::vector<Connection>& connections() const { return connections_; }
  [[nodiscard]] const NicParams& params() const { return params_; }
  /// The PCIe link a NIC of `port_rate` uses (params.pcie sized for the port when auto).
  [[nodiscard]] PcieParams pcie_for(DataRate port_rate) const;
  /// Unloaded round trip of an MTU packet and its ACK between two NICs (HPCC's T).
  [[nodiscard]] static SimTime base_rtt(const topology::Topology& topo,
                                        const fabric::Routing& routing,
                                        const fabric::FabricParams& fp, topology::PortId a,
                                        topology::PortId b);

 private:
  friend class VerbsOnServer;
  friend class RcTransport;
  /// The application's callbacks, from the transport.
  void notify_app(pdes::LpContext& ctx, std::uint32_t endpoint);
  void notify_in_network(pdes::LpContext& ctx, std::uint32_t nic, const fabric::Packet& pkt);

  NicParams params_;
  std::vector<Connection> connections_;
  RdmaApp* app_;
  fabric::FabricModel* fabric_ = nullptr;
  std::unique_ptr<RcTransport> transport_;  ///< the rank's queue pairs and NIC ports
};

/// The verbs of the server being run, for the duration of one callback.
class VerbsOnServer final : public Verbs {
 public:
  VerbsOnServer(RdmaHost& host, pdes::LpContext& ctx) : host_(host), ctx_(ctx) {}
  [[nodiscard]] SimTime now() const override;
  [[nodiscard]] topology::NodeId server() const override;
  bool post(std::uint32_t endpoint, const WorkRequest& wr) override;
  std::size_t poll_cq(std::uint32_t endpoint, std::span<Completion> out) override;
  [[nodiscard]] QpState state(std::uint32_t endpoint) const override;
  void schedule(SimTime delay, const AppTimer& timer) override;
  void send_in_network(topology::PortId nic, const fabric::Packet& pkt) override;

 private:
  RdmaHost& host_;
  pdes::LpContext& ctx_;
};

/// Sets what the fabric must do for the NIC parameters: what the congestion control declares it
/// needs (INT telemetry for HPCC).
void configure_fabric(const NicParams& nic, fabric::FabricParams& fabric);

}  // namespace stepsim::nic
