#include "stepsim/core/memory.hpp"

#include <cstdio>
#include <cstring>

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

}  // namespace stepsim
