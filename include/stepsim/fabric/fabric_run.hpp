#pragma once
/// Running raw traffic over a topology on the engine, and the summary a user reads.

#include <cstdint>
#include <utility>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::fabric {

/// What a fabric run reports (identical on every rank).
struct FabricSummary {
  std::uint64_t packet_hops = 0;  ///< packets sent over links (one link crossing = one hop)
  std::uint64_t bytes = 0;        ///< frame bytes sent over links
  std::uint64_t ecn_marks = 0;
  std::uint64_t pause_frames = 0;
  std::int64_t paused_ps = 0;  ///< summed over ports
  std::uint64_t drops_buffer = 0;
  std::uint64_t drops_fec = 0;
  std::uint64_t drops_link_down = 0;
  std::uint64_t drops_unroutable = 0;
  std::uint64_t fec_corrected = 0;
  std::uint64_t trimmed = 0;  ///< packets cut to their headers (fabric.trimming)
  // RDMA runs: the endpoints' totals (0 for raw flows).
  std::uint64_t retransmitted = 0;   ///< data packets sent again
  std::uint64_t nacks = 0;           ///< NACKs of trimmed packets the senders received
  std::uint64_t timeouts = 0;        ///< retransmission timeouts
  std::uint64_t duplicates = 0;      ///< data packets that arrived again (spurious resends)
  std::uint64_t sack_losses = 0;     ///< uet: holes the senders' SACKs declared lost
  std::int64_t max_queue = 0;        ///< largest egress backlog anywhere
  std::int64_t first_mark_ps = -1;   ///< first ECN mark anywhere
  std::int64_t first_pause_ps = -1;  ///< first PAUSE anywhere
  std::size_t flows = 0;
  std::size_t flows_complete = 0;
  double fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;  ///< complete flows, from their start
  double last_byte_us = 0;                                ///< when the last flow completed
  /// Bytes over switch uplinks (tier t -> t+1) per tier-1 switch group: max / mean (1 = even).
  double uplink_max_over_mean = 1.0;
  double uplink_cv = 0.0;  ///< coefficient of variation of uplink bytes
  /// Every packet lost, whatever the cause.
  [[nodiscard]] std::uint64_t drops() const {
    return drops_buffer + drops_fec + drops_link_down + drops_unroutable;
  }
};

FabricSummary summarize(const topology::Topology& topo, const FabricResults& results,
                        const std::vector<Flow>& flows);
/// Fills the completion fields of `s` (complete flows, FCT percentiles, last byte) from the
/// (start, end) picosecond times of the flows that completed.
void summarize_completions(const std::vector<std::pair<std::int64_t, std::int64_t>>& done,
                           FabricSummary& s);

/// A complete run: model, engine, results. Collective over `sync`.
struct FabricRun {
  pdes::RunStats stats;
  FabricResults results;
  FabricSummary summary;
  std::size_t model_bytes = 0;  ///< model state on this rank
};

/// Runs `flows` over `topo` until `end` (or until the fabric is idle). Errors are user errors.
/// `samples` (optional) records the ports' time series; drain it from engine_options.at_window.
Result<FabricRun> run_fabric(const topology::Topology& topo, const std::vector<Flow>& flows,
                             const FabricParams& params, pdes::Sync& sync,
                             pdes::EngineOptions engine_options, FabricSamples* samples = nullptr);

}  // namespace stepsim::fabric
