#pragma once
// Output and size conventions that `bench nccl` and `bench perftest` share with the tools they
// stand in for (nccl-tests, perftest): sizes with K/M/G suffixes in powers of 1024, numbers
// fitted to a fixed column width, and the engine's summary line.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"

namespace CLI {
class App;
}

namespace stepsim::cli {

/// A repeated option keeps its last value, as nccl-tests and perftest read argv; --set adds up.
void last_value_wins(CLI::App& cmd);

/// A size as nccl-tests and perftest read it: a whole number with an optional K, M or G
/// (either case) in powers of 1024 (`64K` = 65,536, `1G` = 2^30), or any of stepsim's byte units
/// (`1GiB` = 2^30, `1GB` = 10^9: SI). Values above 2^62 bytes are an error, not a wrap-around.
Result<std::int64_t> parse_binary_size(const std::string& text);

/// `value` right-aligned in `width` characters with as many decimals (2, 1 or 0) as fit, or in
/// exponent notation when even the integer part does not fit: nccl-tests' time and bandwidth
/// columns.
std::string fit_number(double value, int width);

/// The engine's summary: "<prefix>ranks R, threads/rank T, E events in W s (M M/s)".
void print_engine_line(const char* prefix, int ranks, int threads, std::uint64_t events,
                       double wall_s);

}  // namespace stepsim::cli
