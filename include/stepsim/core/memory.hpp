#pragma once
/// Process memory readings (Linux /proc).

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"

namespace stepsim {

/// Peak resident set size of this process in bytes (VmHWM), 0 if unknown.
std::int64_t peak_rss_bytes();
/// Current resident set size in bytes (VmRSS), 0 if unknown.
std::int64_t current_rss_bytes();
/// Memory this machine can still give a process (MemAvailable in /proc/meminfo, else MemTotal),
/// in bytes; 0 if unknown.
std::int64_t available_memory_bytes();

/// Ranks of this run on this node (Open MPI's, MPICH's or Slurm's variable; 1 if none is set).
int local_rank_count();

/// Refuses a run whose estimated memory on this node (bytes) exceeds what the machine has
/// (MemAvailable, or the environment's STEPSIM_MEMORY_LIMIT, a size such as "8GiB", when
/// smaller); `what` says what was counted ("524,288 servers and 81,920 switches").
Result<bool> check_memory_estimate(double estimate_bytes, const std::string& what);

}  // namespace stepsim
