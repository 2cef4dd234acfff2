#include "stepsim/kernels/reduce.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <mutex>

namespace stepsim::kernels {
namespace {

// Kokkos is initialised on first use and finalised at exit, so callers need no set-up.
void ensure_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!Kokkos::is_initialized()) {
      Kokkos::InitArguments args;
      args.num_threads = 1;
      args.disable_warnings = true;
      Kokkos::initialize(args);
      std::atexit([] {
        if (Kokkos::is_initialized()) Kokkos::finalize();
      });
    }
  });
}

}  // namespace

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
