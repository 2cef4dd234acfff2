#pragma once
/// One collective repeated back to back in one simulation, as nccl-tests' loop launches it on
/// each GPU's stream: iteration k + 1 starts on a server (after the protocol's base latency, like
/// the first) when every GPU of the communicator on that server has finished iteration k. The
/// iterations share the RC connections, so what the first leaves behind (congestion-control
/// rates, queues in the fabric, caches in the NICs) is what the next starts with. A message
/// carries its iteration in its immediate data; one that arrives at a server before that server
/// has started its iteration waits there until it has.

#include <vector>

#include "stepsim/collective/collective_app.hpp"

namespace stepsim::collective {

/// The iterations' results, in order, and the run they shared.
struct IteratedRun {
  std::vector<CollectiveResult> results;  ///< by iteration; gpu_done_ps in simulated time
  nic::RdmaRun rdma;
  Choice choice;
  /// By iteration and GPU (communicator rank): when the iteration started on the GPU's server
  /// (ps; -1 if it never did).
  std::vector<std::vector<std::int64_t>> started_ps;
};

/// `iterations` (>= 1) of the collective in one run. One iteration is exactly run_collective's
/// run. SHARP is not supported (its switches hold one collective's aggregation state).
Result<IteratedRun> run_collective_iterations(const topology::Topology& topo,
                                              const Communicator& comm, const CollectiveSpec& spec,
                                              const CollectiveParams& params,
                                              const nic::NicParams& nic,
                                              const fabric::FabricParams& fabric, int iterations,
                                              pdes::Sync& sync, pdes::EngineOptions engine_options);

}  // namespace stepsim::collective
