#include "stepsim/kernels/reduce.hpp"

#include <Kokkos_Core.hpp>

#include "src/kernels/kokkos_init.hpp"

namespace stepsim::kernels {

std::uint64_t sum_u64(std::span<const std::uint64_t> values) {
  ensure_kokkos();
  using Space = Kokkos::DefaultHostExecutionSpace;
  const std::uint64_t* data = values.data();
  std::uint64_t total = 0;
  Kokkos::parallel_reduce(
      "stepsim::sum_u64", Kokkos::RangePolicy<Space>(0, values.size()),
      [data](std::size_t i, std::uint64_t& acc) { acc += data[i]; }, total);
  return total;
}

const char* execution_space_name() {
  ensure_kokkos();
  return Kokkos::DefaultHostExecutionSpace::name();
}

}  // namespace stepsim::kernels
