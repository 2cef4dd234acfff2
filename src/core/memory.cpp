#include "stepsim/core/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "stepsim/core/units.hpp"

namespace stepsim {
namespace {

std::int64_t status_kib(const char* key, const char* file = "/proc/self/status") {
  std::FILE* f = std::fopen(file, "r");
  if (!f) return 0;
  char line[256];
  std::int64_t kib = 0;
  const std::size_t len = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, len) == 0) {
      long long v = 0;
      if (std::sscanf(line + len, " %lld", &v) == 1) kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib;
}

// "12.3 GiB", or "45.6 MiB" below a GiB.
std::string size_text(double bytes) {
  char buf[64];
  if (bytes >= 1 << 30) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1 << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  }
  return buf;
}

}  // namespace

std::int64_t peak_rss_bytes() {
  return status_kib("VmHWM:") * 1024;
}
std::int64_t current_rss_bytes() {
  return status_kib("VmRSS:") * 1024;
}

std::int64_t available_memory_bytes() {
  std::int64_t kib = status_kib("MemAvailable:", "/proc/meminfo");
  if (kib <= 0) kib = status_kib("MemTotal:", "/proc/meminfo");
  return kib * 1024;
}

int local_rank_count() {
  for (const char* var :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

Result<bool> check_memory_estimate(double estimate_bytes, const std::string& what) {
  std::int64_t have = available_memory_bytes();
  // STEPSIM_MEMORY_LIMIT caps it: a share of a node, or a test.
  if (const char* limit = std::getenv("STEPSIM_MEMORY_LIMIT")) {
    const auto b = parse_bytes(limit);
    if (!b) return Error{"STEPSIM_MEMORY_LIMIT: " + b.error().message};
    have = have > 0 ? std::min(have, b->count()) : b->count();
  }
  if (have <= 0 || estimate_bytes <= static_cast<double>(have)) return true;
  const double avail = static_cast<double>(have);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "too large: %s needs about %s of memory, but this machine has %s available "
                "(/proc/meminfo, STEPSIM_MEMORY_LIMIT); use a smaller input or more nodes",
                what.c_str(), size_text(estimate_bytes).c_str(), size_text(avail).c_str());
  return Error{buf};
}

}  // namespace stepsim
