#include "stepsim/pdes/rng.hpp"

namespace stepsim::pdes::detail {

// Layer i >= 1 is the rectangle [0, x[i]] x [f(x[i]), f(x[i+1])]; equal areas give
// x[i+1] = -log(kArea / x[i] + f(x[i])). Layer 0 is [0, kR] x [0, f(kR)] plus the tail beyond kR,
// whose area kR f(kR) + f(kR) equals kArea; x[0] = kArea / f(kR) is its virtual width.
ExpZiggurat::ExpZiggurat() {
  x[0] = kArea / std::exp(-kR);
  x[1] = kR;
  for (int i = 1; i < kLayers - 1; ++i) x[i + 1] = -std::log(kArea / x[i] + std::exp(-x[i]));
  x[kLayers] = 0.0;
  for (int i = 0; i <= kLayers; ++i) f[i] = std::exp(-x[i]);
  f[0] = 0.0;  // the base layer starts at height 0
}

const ExpZiggurat kExpZiggurat;

}  // namespace stepsim::pdes::detail
