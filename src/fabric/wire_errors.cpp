#include "stepsim/fabric/wire_errors.hpp"

#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/phy/fec.hpp"

namespace stepsim::fabric {

double WireErrors::loss_probability(std::uint32_t frame, const FabricParams& p) {
  if (cached_frame_ != frame) {
    const Bytes size(frame);
    if (p.fec) {
      const double pcw =
          p.lane_ber.empty()
              ? phy::codeword_failure_probability_burst(phy::kKp4, ber_, p.burst_symbols)
              : phy::codeword_failure_probability_lanes(phy::kKp4, p.lane_ber);
      cached_loss_ = phy::any_failure_probability(pcw, phy::codewords_spanned(phy::kKp4, size));
    } else {
      cached_loss_ = phy::raw_frame_error_probability(ber_, size);
    }
    cached_frame_ = frame;
  }
  return cached_loss_;
}

bool WireErrors::lose_frame(std::uint32_t frame, const FabricParams& p, PortStats& stats) {
  if (rng_.uniform() < loss_probability(frame, p)) {
    ++stats.drops_fec;
    ++stats.fec_uncorrectable;
    return true;
  }
  if (p.fec) {
    const double corr = phy::codeword_corrected_probability(phy::kKp4, ber_);
    const std::int64_t cws = phy::codewords_spanned(phy::kKp4, Bytes(frame));
    for (std::int64_t i = 0; i < cws; ++i) stats.fec_corrected += rng_.uniform() < corr ? 1 : 0;
  }
  return false;
}

}  // namespace stepsim::fabric
