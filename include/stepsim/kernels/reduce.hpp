#pragma once
/// Data-parallel reductions over large arrays (Kokkos behind a plain C++ interface; STYLE.md 11).

#include <cstdint>
#include <span>

namespace stepsim::kernels {

/// Sum modulo 2^64 of all values (order-independent, so any backend gives the same result).
std::uint64_t sum_u64(std::span<const std::uint64_t> values);

/// Name of the Kokkos execution space used by the kernels (e.g. "Serial", "OpenMP").
const char* execution_space_name();

}  // namespace stepsim::kernels
