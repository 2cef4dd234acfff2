#pragma once
/// PHOLD, the standard PDES benchmark, as ROSS defines it: every event schedules one new event at
/// now + lookahead + Exp(mean - lookahead) (so `mean` is the mean total delay); with probability
/// `remote` the destination is uniform over all LPs, otherwise the LP itself.

#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/pdes/lp_graph.hpp"
#include "stepsim/pdes/model.hpp"
#include "stepsim/pdes/rng.hpp"

namespace stepsim::bench {

struct PholdParams {
  std::uint32_t lps = 1024;            ///< logical processes
  std::uint32_t events_per_lp = 16;    ///< initial events per LP (the population)
  double remote = 0.1;                 ///< probability that an event goes to a random LP
  SimTime lookahead = SimTime::us(1);  ///< minimum delay of every event
  SimTime mean = SimTime::us(2);       ///< mean total delay (lookahead + exponential part)
  SimTime end = SimTime::ms(2);        ///< events at or after this time are not processed
  std::uint32_t seed = 1;              ///< selects the random streams

  /// Checks ranges; the error names the option and the allowed values.
  [[nodiscard]] Result<bool> validate() const;
  /// Expected committed events: lps * events_per_lp * (end - first-event time) / mean, roughly.
  [[nodiscard]] double expected_events() const;
};

/// The PHOLD model. LP state: a random stream, an event count and a rolling hash of the
/// (time, source) sequence it processed, which the digest covers.
class Phold final : public pdes::Model {
 public:
  explicit Phold(const PholdParams& params);

  /// The LP graph: every LP may send to every other with delay >= lookahead.
  [[nodiscard]] pdes::LpGraph graph() const;

  void setup(std::span<const pdes::LpId> local_lps) override;
  void init_lp(pdes::LpContext& ctx) override;
  void handle(pdes::LpContext& ctx, const pdes::Event& ev) override;
  [[nodiscard]] std::uint64_t lp_digest(std::uint32_t slot) const override;

 private:
  struct LpState {
    pdes::Rng rng;
    std::uint64_t processed = 0;
    std::uint64_t hash = 0;
  };
  void schedule(pdes::LpContext& ctx, LpState& s);

  PholdParams p_;
  double exp_mean_ps_;
  std::uint64_t remote_threshold_;
  std::vector<LpState> state_;
};

}  // namespace stepsim::bench
