#pragma once
/// Process memory readings (Linux /proc).

#include <cstdint>

namespace stepsim {

/// Peak resident set size of this process in bytes (VmHWM), 0 if unknown.
std::int64_t peak_rss_bytes();
/// Current resident set size in bytes (VmRSS), 0 if unknown.
std::int64_t current_rss_bytes();
/// Memory this machine can still give a process (MemAvailable in /proc/meminfo, else MemTotal),
/// in bytes; 0 if unknown.
std::int64_t available_memory_bytes();

}  // namespace stepsim
