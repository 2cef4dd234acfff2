// PHOLD (Fujimoto 1990) in the form ROSS uses (ross/models/phold): a fixed population of events
// hopping between LPs with delay lookahead + Exp(mean - lookahead); a fraction `remote` goes to a
// uniformly random LP. Exact to that definition; times are rounded down to whole picoseconds.
#include "stepsim/bench/phold.hpp"

#include <cmath>

#include "stepsim/core/hash.hpp"

namespace stepsim::bench {

Result<bool> PholdParams::validate() const {
  if (lps < 1) return Error{"--lps must be at least 1"};
  if (events_per_lp < 1) return Error{"--events-per-lp must be at least 1"};
  if (!(remote >= 0.0 && remote <= 1.0)) {
    return Error{"--remote must be a probability in [0, 1], got " + std::to_string(remote)};
  }
  if (lookahead <= SimTime::zero()) return Error{"--lookahead must be positive, e.g. 1us"};
  if (mean < lookahead) {
    return Error{"--mean (" + to_string(mean) +
                 ") is the mean total delay and must be at least "
                 "--lookahead (" +
                 to_string(lookahead) + ")"};
  }
  if (end <= SimTime::zero()) return Error{"--end must be positive, e.g. 2ms"};
  return true;
}

double PholdParams::expected_events() const {
  return static_cast<double>(lps) * events_per_lp * std::max(0.0, end.seconds() - mean.seconds()) /
         mean.seconds();
}

Phold::Phold(const PholdParams& params)
    : p_(params),
      exp_mean_ps_(static_cast<double>((params.mean - params.lookahead).picoseconds())),
      remote_threshold_(static_cast<std::uint64_t>(params.remote * 4294967296.0)) {}

pdes::LpGraph Phold::graph() const {
  pdes::LpGraph g(p_.lps, "phold");
  if (p_.lps > 1 && p_.remote > 0) g.connect_all(p_.lookahead);
  g.finalize();
  return g;
}

void Phold::setup(std::span<const pdes::LpId> local_lps) {
  state_.assign(local_lps.size(), LpState{});
  for (std::size_t s = 0; s < local_lps.size(); ++s) {
    state_[s].rng = pdes::Rng(p_.seed, local_lps[s], /*stream=*/0);
  }
}

void Phold::schedule(pdes::LpContext& ctx, LpState& s) {
  pdes::LpId dst = ctx.self();
  if (remote_threshold_ > 0 && s.rng.next_u32() < remote_threshold_) dst = s.rng.below(p_.lps);
  const double extra = exp_mean_ps_ > 0 ? s.rng.exponential(exp_mean_ps_) : 0.0;
  ctx.send(dst, p_.lookahead + SimTime::ps(static_cast<std::int64_t>(extra)), /*kind=*/0);
}

void Phold::init_lp(pdes::LpContext& ctx) {
  LpState& s = state_[ctx.slot()];
  for (std::uint32_t i = 0; i < p_.events_per_lp; ++i) {
    const double extra = exp_mean_ps_ > 0 ? s.rng.exponential(exp_mean_ps_) : 0.0;
    ctx.send(ctx.self(), p_.lookahead + SimTime::ps(static_cast<std::int64_t>(extra)), 0);
  }
}

void Phold::handle(pdes::LpContext& ctx, const pdes::Event& ev) {
  LpState& s = state_[ctx.slot()];
  ++s.processed;
  s.hash = hash_combine(s.hash, static_cast<std::uint64_t>(ev.time.picoseconds()) ^
                                    (static_cast<std::uint64_t>(ev.src) << 40));
  schedule(ctx, s);
}

std::uint64_t Phold::lp_digest(std::uint32_t slot) const {
  const LpState& s = state_[slot];
  return hash_combine(hash_combine(s.processed, s.hash), s.rng.draws());
}

}  // namespace stepsim::bench
