#pragma once
// Small models with answers known by hand, shared by the serial and MPI engine tests.

#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/core/hash.hpp"
#include "stepsim/pdes/lp_graph.hpp"
#include "stepsim/pdes/model.hpp"

namespace stepsim::testing {

/// Tokens circulating on a ring of LPs: LP i forwards every token to LP (i+1) % n after
/// delay(i) = base + i * step. Token k starts on LP k at time 0. Arrival times are sums of the
/// delays, computable by hand (expected_arrivals).
class TokenRing final : public pdes::Model {
 public:
  struct Arrival {
    std::uint32_t token;
    std::int64_t time_ps;
    bool operator==(const Arrival&) const = default;
  };

  TokenRing(std::uint32_t lps, std::uint32_t tokens, SimTime base, SimTime step)
      : n_(lps), tokens_(tokens), base_(base), step_(step) {}

  [[nodiscard]] SimTime delay(std::uint32_t lp) const { return base_ + step_ * lp; }

  [[nodiscard]] pdes::LpGraph graph() const {
    pdes::LpGraph g(n_, "token ring");
    for (std::uint32_t i = 0; i < n_; ++i) g.add_edge(i, (i + 1) % n_, delay(i));
    g.finalize();
    return g;
  }

  /// What LP `lp` must see before `end`, computed without the engine.
  [[nodiscard]] std::vector<Arrival> expected_arrivals(pdes::LpId lp, SimTime end) const {
    std::vector<Arrival> out;
    for (std::uint32_t k = 0; k < tokens_; ++k) {
      std::uint32_t at = k % n_;
      SimTime t = SimTime::zero();
      for (;;) {
        t += delay(at);
        at = (at + 1) % n_;
        if (t >= end) break;
        if (at == lp) out.push_back({k, t.picoseconds()});
      }
    }
    std::sort(out.begin(), out.end(), [](const Arrival& a, const Arrival& b) {
      return a.time_ps != b.time_ps ? a.time_ps < b.time_ps : a.token < b.token;
    });
    return out;
  }

  void setup(std::span<const pdes::LpId> local) override {
    local_.assign(local.begin(), local.end());
    seen_.assign(local.size(), {});
  }
  void init_lp(pdes::LpContext& ctx) override {
    for (std::uint32_t k = 0; k < tokens_; ++k) {
      if (k % n_ == ctx.self()) ctx.send((ctx.self() + 1) % n_, delay(ctx.self()), 0, k);
    }
  }
  void handle(pdes::LpContext& ctx, const pdes::Event& ev) override {
    seen_[ctx.slot()].push_back({ev.aux, ctx.now().picoseconds()});
    ctx.send((ctx.self() + 1) % n_, delay(ctx.self()), 0, ev.aux);
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t slot) const override {
    std::uint64_t h = 0;
    for (const Arrival& a : seen_[slot])
      h = hash_combine(hash_combine(h, a.token), static_cast<std::uint64_t>(a.time_ps));
    return h;
  }

  [[nodiscard]] std::span<const pdes::LpId> local() const { return local_; }
  [[nodiscard]] const std::vector<Arrival>& seen(std::size_t slot) const { return seen_[slot]; }

 private:
  std::uint32_t n_;
  std::uint32_t tokens_;
  SimTime base_;
  SimTime step_;
  std::vector<pdes::LpId> local_;
  std::vector<std::vector<Arrival>> seen_;
};

/// Fan-in with ties: every LP except 0 sends one event to LP 0 at exactly the same time T, and
/// LP 0 schedules itself at T too. LP 0 must handle them in the order (time, source LP, sequence)
/// whatever the partition: sources ascending, itself in its place.
class FanInTies final : public pdes::Model {
 public:
  FanInTies(std::uint32_t lps, SimTime latency) : n_(lps), latency_(latency) {}
  [[nodiscard]] pdes::LpGraph graph() const {
    pdes::LpGraph g(n_, "fan-in");
    for (std::uint32_t i = 1; i < n_; ++i) g.add_edge(0, i, latency_);
    g.finalize();
    return g;
  }
  void setup(std::span<const pdes::LpId> local) override {
    local_.assign(local.begin(), local.end());
    order_.clear();
  }
  void init_lp(pdes::LpContext& ctx) override {
    // Two events per source, to exercise the sequence tie-break as well.
    ctx.send(0, latency_, 0, 0);
    if (ctx.self() != 0) ctx.send(0, latency_, 0, 1);
  }
  void handle(pdes::LpContext& ctx, const pdes::Event& ev) override {
    (void)ctx;
    order_.push_back({ev.src, ev.aux});
  }
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t slot) const override {
    std::uint64_t h = 0;
    if (local_[slot] == 0) {
      for (auto [src, aux] : order_) h = hash_combine(h, (std::uint64_t{src} << 8) | aux);
    }
    return h;
  }
  /// The order LP 0 must see: itself first (source 0), then every source's two events in turn.
  [[nodiscard]] std::vector<std::pair<pdes::LpId, std::uint32_t>> expected_order() const {
    std::vector<std::pair<pdes::LpId, std::uint32_t>> want = {{0, 0}};
    for (pdes::LpId s = 1; s < n_; ++s) {
      want.push_back({s, 0});
      want.push_back({s, 1});
    }
    return want;
  }
  [[nodiscard]] bool owns_lp0() const { return !local_.empty() && local_.front() == 0; }
  [[nodiscard]] const std::vector<std::pair<pdes::LpId, std::uint32_t>>& order() const {
    return order_;
  }

 private:
  std::uint32_t n_;
  SimTime latency_;
  std::vector<pdes::LpId> local_;
  std::vector<std::pair<pdes::LpId, std::uint32_t>> order_;
};

}  // namespace stepsim::testing
