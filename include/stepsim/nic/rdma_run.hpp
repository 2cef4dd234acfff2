#pragma once
/// Running an RDMA application over a topology on the engine.

#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/nic/rdma_host.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::nic {

/// Totals over every endpoint and NIC of a run.
struct RdmaSummary {
  QpStats qp;    ///< summed counters (state and error fields unused)
  NicStats nic;  ///< summed counters
  std::uint64_t qps_in_error = 0;
  /// Hit rates in percent (100 when there was no lookup).
  [[nodiscard]] double ctx_hit_percent() const;
  [[nodiscard]] double mtt_hit_percent() const;
};

RdmaSummary summarize(const RdmaResults& results);

struct RdmaRun {
  pdes::RunStats stats;
  /// How the LPs were split over the ranks (the LP graph weighted by the connections' traffic).
  pdes::PartitionQuality partition;
  fabric::FabricResults fabric;
  fabric::FabricSummary summary;
  RdmaResults rdma;
};

/// Runs `app` on RDMA NICs over `topo` until `end` or until nothing is left to do. Errors are
/// user errors (bad parameters, a connection that names a switch port). `agent` (optional) runs
/// the switches' in-network computing. Collective over `sync`.
Result<RdmaRun> run_rdma(const topology::Topology& topo, const std::vector<Connection>& connections,
                         const NicParams& nic, fabric::FabricParams fabric, RdmaApp* app,
                         pdes::Sync& sync, pdes::EngineOptions engine_options,
                         fabric::InNetworkAgent* agent = nullptr);

}  // namespace stepsim::nic
