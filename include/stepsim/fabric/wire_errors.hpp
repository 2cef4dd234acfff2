#pragma once
// Wire errors of one link direction (the pipe's loss model): the pre-FEC BER of the link, KP4
// RS(544,514) FEC per codeword (docs/fabric.md, phy/fec.hpp), or with FEC off any bit error. The
// sender draws, per frame, whether an uncorrectable codeword (or a raw bit error) destroys it, and
// counts the codewords FEC corrected. Simplification: a frame's codewords fail independently.

#include <cstdint>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/pdes/rng.hpp"

namespace stepsim::fabric {

struct PortStats;

/// The error model of the link a port sends on; one per egress port.
class WireErrors {
 public:
  /// Seeds the draws and sets the link's mean pre-FEC BER.
  void reset(pdes::Rng rng, double ber) {
    rng_ = rng;
    ber_ = ber;
    cached_frame_ = 0;
  }
  [[nodiscard]] double ber() const { return ber_; }
  /// The link's rate changed (lost lanes): forget the cached probability.
  void invalidate() { cached_frame_ = 0; }
  /// Draws the fate of one frame of `frame` bytes; true if it is lost. Counts into `stats`
  /// (drops_fec, fec_uncorrectable, fec_corrected).
  bool lose_frame(std::uint32_t frame, const FabricParams& p, PortStats& stats);
  /// Probability that a frame of `frame` bytes is lost (cached for the last size).
  double loss_probability(std::uint32_t frame, const FabricParams& p);

 private:
  pdes::Rng rng_;
  double ber_ = 0;
  std::uint32_t cached_frame_ = 0;
  double cached_loss_ = 0;
};

}  // namespace stepsim::fabric
