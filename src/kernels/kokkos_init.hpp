#pragma once
// Kokkos is initialised on first use by any kernel and finalised at exit, so callers need no
// set-up. Private to src/kernels/.

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <mutex>

namespace stepsim::kernels {

inline void ensure_kokkos() {
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

}  // namespace stepsim::kernels
