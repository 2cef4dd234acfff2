#pragma once
/// Running an RDMA application over a topology on the engine.

#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/nic/rdma_host.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::nic {

struct RdmaRun {
  pdes::RunStats stats;
  fabric::FabricResults fabric;
  fabric::FabricSummary summary;
  RdmaResults rdma;
};

/// Runs `app` on RDMA NICs over `topo` until `end` or until nothing is left to do. Errors are
/// user errors (bad parameters, a connection that names a switch port). Collective over `sync`.
Result<RdmaRun> run_rdma(const topology::Topology& topo, const std::vector<Connection>& connections,
                         const NicParams& nic, fabric::FabricParams fabric, RdmaApp* app,
                         pdes::Sync& sync, pdes::EngineOptions engine_options);

}  // namespace stepsim::nic
