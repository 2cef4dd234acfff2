#include "stepsim/kernels/alpha_beta.hpp"

#include <Kokkos_Core.hpp>

#include "src/kernels/kokkos_init.hpp"

namespace stepsim::kernels {

void alpha_beta(std::span<const AlphaBeta> in, std::span<double> out) {
  ensure_kokkos();
  using Space = Kokkos::DefaultHostExecutionSpace;
  const AlphaBeta* x = in.data();
  double* y = out.data();
  Kokkos::parallel_for("stepsim::alpha_beta", Kokkos::RangePolicy<Space>(0, in.size()),
                       [x, y](std::size_t i) {
                         const double t = x[i].latency_s + x[i].bytes / x[i].rate;
                         y[i] = t > x[i].chain_s ? t : x[i].chain_s;
                       });
  Kokkos::fence();
}

}  // namespace stepsim::kernels
