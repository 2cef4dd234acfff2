#include "src/cli/bench_output.hpp"

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "stepsim/core/units.hpp"

namespace stepsim::cli {

Result<std::int64_t> parse_binary_size(const std::string& text) {
  const std::size_t digits = text.find_first_not_of("0123456789");
  const bool suffixed = digits != std::string::npos && digits > 0 && digits + 1 == text.size();
  std::int64_t unit = 0;
  if (suffixed) {
    switch (text.back()) {
      case 'K':
      case 'k':
        unit = std::int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        unit = std::int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        unit = std::int64_t{1} << 30;
        break;
      default:
        break;
    }
  }
  constexpr std::int64_t kMax = std::int64_t{1} << 62;
  if (unit == 0) {
    auto b = parse_bytes(text);
    if (!b) return b.error();
    if (b->count() < 0 || b->count() > kMax) {
      return Error{"'" + text + "' is out of range (0 .. 4EiB)"};
    }
    return b->count();
  }
  std::int64_t n = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    n = n * 10 + (text[i] - '0');
    if (n > kMax / unit) return Error{"'" + text + "' is out of range (0 .. 4EiB)"};
  }
  return n * unit;
}

std::string fit_number(double value, int width) {
  // The most decimals (2, 1, 0) that fit; rounding may add a digit (9999.995 -> 10000.00), so
  // each candidate is checked by its printed length.
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    const int n = std::snprintf(buf, sizeof buf, "%*.*f", width, decimals, value);
    if (n <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, "%*.1e", width, value);
  return buf;
}

void print_engine_line(const char* prefix, int ranks, int threads, std::uint64_t events,
                       double wall_s) {
  std::printf("%sranks %d, threads/rank %d, %" PRIu64 " events in %.3f s (%.2f M/s)\n", prefix,
              ranks, threads, events, wall_s,
              wall_s > 0 ? static_cast<double>(events) / wall_s / 1e6 : 0.0);
}

void last_value_wins(CLI::App& cmd) {
  for (CLI::Option* opt : cmd.get_options()) {
    if (opt->get_name() != "--set") opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

}  // namespace stepsim::cli
