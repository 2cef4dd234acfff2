#include "stepsim/pdes/lp_graph.hpp"

#include <algorithm>

#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {

LpGraph::LpGraph(LpId lp_count, std::string name)
    : n_(lp_count), name_(std::move(name)), vweight_(lp_count, 1), tier_(lp_count, 0) {}

void LpGraph::add_edge(LpId a, LpId b, SimTime latency, std::int64_t weight) {
  STEPSIM_CHECK(!finalized_, "add_edge after finalize");
  STEPSIM_CHECK(a < n_ && b < n_, "edge " + std::to_string(a) + "-" + std::to_string(b) +
                                      " outside " + std::to_string(n_) + " LPs");
  STEPSIM_CHECK(a != b, "an LP has no channel to itself (LP " + std::to_string(a) + ")");
  STEPSIM_CHECK(
      latency > SimTime::zero(),
      "channel " + std::to_string(a) + "-" + std::to_string(b) + " has zero latency: no lookahead");
  raw_.push_back({a, b, latency, weight});
}

void LpGraph::connect_all(SimTime latency) {
  STEPSIM_CHECK(latency > SimTime::zero(), "connect_all needs a positive latency");
  all_to_all_ = all_to_all_ ? std::min(*all_to_all_, latency) : latency;
}

void LpGraph::set_vertex_weight(LpId lp, std::int64_t weight) {
  STEPSIM_CHECK(lp < n_, "vertex weight for LP " + std::to_string(lp) + " out of range");
  vweight_[lp] = weight;
}

void LpGraph::set_vertex_tier(LpId lp, std::uint8_t tier) {
  STEPSIM_CHECK(lp < n_, "vertex tier for LP " + std::to_string(lp) + " out of range");
  tier_[lp] = tier;
}

void LpGraph::finalize() {
  std::vector<RawEdge> dir;
  dir.reserve(raw_.size() * 2);
  for (const RawEdge& e : raw_) {
    dir.push_back(e);
    dir.push_back({e.b, e.a, e.latency, e.weight});
  }
  std::sort(dir.begin(), dir.end(),
            [](const RawEdge& x, const RawEdge& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  offsets_.assign(static_cast<std::size_t>(n_) + 1, 0);
  adj_.clear();
  for (std::size_t i = 0; i < dir.size();) {
    std::size_t j = i;
    LpEdge merged{dir[i].b, dir[i].latency, 0};
    for (; j < dir.size() && dir[j].a == dir[i].a && dir[j].b == dir[i].b; ++j) {
      merged.latency = std::min(merged.latency, dir[j].latency);
      merged.weight += dir[j].weight;
    }
    adj_.push_back(merged);
    ++offsets_[dir[i].a + 1];
    i = j;
  }
  for (std::size_t v = 0; v < n_; ++v) offsets_[v + 1] += offsets_[v];
  raw_.clear();
  raw_.shrink_to_fit();
  finalized_ = true;
}

std::span<const LpEdge> LpGraph::neighbours(LpId lp) const {
  STEPSIM_CHECK(finalized_, "LpGraph used before finalize()");
  return {adj_.data() + offsets_[lp], adj_.data() + offsets_[lp + 1]};
}

SimTime LpGraph::min_latency() const {
  STEPSIM_CHECK(finalized_, "LpGraph used before finalize()");
  SimTime m = all_to_all_.value_or(SimTime::never());
  for (const LpEdge& e : adj_) m = std::min(m, e.latency);
  return m;
}

SimTime LpGraph::min_latency_into(LpId lp) const {
  STEPSIM_CHECK(finalized_, "LpGraph used before finalize()");
  SimTime m = all_to_all_.value_or(SimTime::never());
  for (const LpEdge& e : neighbours(lp)) m = std::min(m, e.latency);
  return m;
}

}  // namespace stepsim::pdes
