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

/// What the engine did in packet- or cell-level runs, summed over runs: windows over simulated
/// time (how often the ranks synchronised), the partition's cut traffic and load imbalance
/// (PartitionQuality), and rank 0's synchronisation time.
struct EngineTally {
  std::uint64_t windows = 0;
  std::int64_t simulated_ps = 0;  ///< virtual time the runs covered, summed
  std::int64_t cut_weight = 0;    ///< traffic crossing ranks
  std::int64_t total_weight = 0;  ///< all traffic
  double imbalance = 1.0;         ///< the worst run's max / mean rank load
  double sync_s = 0;         ///< rank 0's time exchanging events and agreeing on windows (wall)
  double compute_s = 0;      ///< rank 0's time processing windows (its slowest thread, wall)
  std::uint64_t events = 0;  ///< committed events, all ranks
  std::uint64_t critical_events = 0;  ///< pdes::RunStats::critical_events, summed over runs
  /// One run's.
  [[nodiscard]] static EngineTally of(const RdmaRun& run);
  void add(const EngineTally& x);
  /// Synchronisation windows per simulated microsecond (0 if nothing was simulated).
  [[nodiscard]] double windows_per_us() const;
  /// Rank 0's synchronisation cost per window (exchange and global minimum), microseconds.
  [[nodiscard]] double sync_us_per_window() const;
  /// events / critical_events: how evenly the windows' events are spread over the ranks.
  [[nodiscard]] double window_parallelism() const;
  /// The share of the traffic that crosses ranks.
  [[nodiscard]] double cut_share() const;
};

/// Runs `app` on RDMA NICs over `topo` until `end` or until nothing is left to do. Errors are
/// user errors (bad parameters, a connection that names a switch port). `agent` (optional) runs
/// the switches' in-network computing; `samples` (optional) records the ports' time series
/// (drain it from engine_options.at_window). Collective over `sync`.
Result<RdmaRun> run_rdma(const topology::Topology& topo, const std::vector<Connection>& connections,
                         const NicParams& nic, fabric::FabricParams fabric, RdmaApp* app,
                         pdes::Sync& sync, pdes::EngineOptions engine_options,
                         fabric::InNetworkAgent* agent = nullptr,
                         fabric::FabricSamples* samples = nullptr);

}  // namespace stepsim::nic
