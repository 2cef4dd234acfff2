#include "stepsim/output/text_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace stepsim::output {

Result<bool> write_text_file(const std::string& option, const std::string& path,
                             const std::string& text) {
  const auto failed = [&](int err) {
    return Error{option + ": writing '" + path + "' failed: " + std::strerror(err)};
  };
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Error{option + ": cannot write '" + path + "': " + std::strerror(errno)};
  errno = 0;
  const std::size_t put = std::fwrite(text.data(), 1, text.size(), f);
  int err = put == text.size() ? 0 : (errno != 0 ? errno : EIO);
  if (err == 0 && std::fflush(f) != 0) err = errno != 0 ? errno : EIO;
  if (std::fclose(f) != 0 && err == 0) err = errno != 0 ? errno : EIO;
  if (err != 0) return failed(err);
  return true;
}

}  // namespace stepsim::output
