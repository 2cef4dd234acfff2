#pragma once
/// Process memory readings (Linux /proc).

#include <cstdint>

namespace stepsim {

/// Peak resident set size of this process in bytes (VmHWM), 0 if unknown.
std::int64_t peak_rss_bytes();
/// Current resident set size in bytes (VmRSS), 0 if unknown.
std::int64_t current_rss_bytes();

}  // namespace stepsim
