#pragma once
/// The alpha-beta cost of many transfers at once (Kokkos behind a plain C++ interface; STYLE.md
/// 11): seconds = max(chain, latency + bytes / rate) for every transfer, in bulk.

#include <span>

namespace stepsim::kernels {

struct AlphaBeta {
  double latency_s = 0;  ///< alpha
  double bytes = 0;      ///< what crosses the bottleneck
  double rate = 1;       ///< the bottleneck's bytes per second (beta = 1 / rate)
  /// A latency the transfer cannot beat whatever its size: the chain of hops that every piece of
  /// a pipelined collective crosses one after another (0: none beyond `latency_s`).
  double chain_s = 0;
};

/// out[i] = max(in[i].chain_s, in[i].latency_s + in[i].bytes / in[i].rate); `out` has in.size()
/// entries.
void alpha_beta(std::span<const AlphaBeta> in, std::span<double> out);

}  // namespace stepsim::kernels
