#pragma once
/// The graph of logical processes: vertices are LPs (with a load weight), edges are the cables
/// (or channels) that carry events between them, each with a latency. The engine derives its
/// lookahead and the rank neighbourhoods from it; partitioners cut it.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stepsim/core/units.hpp"
#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

/// One directed adjacency entry of the CSR form.
struct LpEdge {
  LpId to;
  SimTime latency;
  std::int64_t weight;  ///< expected traffic, for partitioning
};

/// An undirected LP graph. Build with add_edge()/connect_all(), then finalize().
class LpGraph {
 public:
  explicit LpGraph(LpId lp_count, std::string name = "lp graph");

  /// A channel between two distinct LPs (both directions) with the given minimum latency.
  void add_edge(LpId a, LpId b, SimTime latency, std::int64_t weight = 1);
  /// Every pair of LPs may exchange events with at least `latency` (PHOLD's uniform remote
  /// destinations). Stored implicitly: no O(n^2) edges.
  void connect_all(SimTime latency);
  /// Load weight of an LP (expected events), for partitioning. Default 1.
  void set_vertex_weight(LpId lp, std::int64_t weight);
  /// Role of an LP, for partitioning: 0 an endpoint (a server: traffic starts and ends there,
  /// the default), 1 and up a switch of that tier (1 the switches endpoints attach to).
  void set_vertex_tier(LpId lp, std::uint8_t tier);
  /// Builds the adjacency (merging parallel edges: min latency, summed weight).
  void finalize();

  [[nodiscard]] LpId size() const { return n_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] bool all_to_all() const { return all_to_all_.has_value(); }
  [[nodiscard]] std::span<const LpEdge> neighbours(LpId lp) const;
  [[nodiscard]] std::int64_t vertex_weight(LpId lp) const { return vweight_[lp]; }
  [[nodiscard]] std::uint8_t vertex_tier(LpId lp) const { return tier_[lp]; }
  [[nodiscard]] std::size_t edge_count() const { return adj_.size() / 2; }
  /// Smallest latency of any channel: the engine's lookahead. never() if no channel exists.
  [[nodiscard]] SimTime min_latency() const;
  /// Smallest latency of the channels into `lp`: no event can reach it sooner after it is sent.
  /// never() for an LP without channels.
  [[nodiscard]] SimTime min_latency_into(LpId lp) const;

 private:
  struct RawEdge {
    LpId a, b;
    SimTime latency;
    std::int64_t weight;
  };
  LpId n_;
  std::string name_;
  std::vector<RawEdge> raw_;
  std::vector<std::int64_t> vweight_;
  std::vector<std::uint8_t> tier_;
  std::vector<std::size_t> offsets_;
  std::vector<LpEdge> adj_;
  std::optional<SimTime> all_to_all_;
  bool finalized_ = false;
};

}  // namespace stepsim::pdes
