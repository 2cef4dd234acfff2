#include "src/cli/data_dir.hpp"

#include <filesystem>
#include <system_error>

#include "stepsim/version.hpp"

namespace stepsim::cli {

std::string data_dir() {
  // An installed binary: the data directory at the same place relative to the executable as
  // `cmake --install` put it (bin/../share/stepsim by default), wherever the prefix was moved.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = (exe.parent_path() / kBinToDataDir).lexically_normal();
    if (std::filesystem::is_directory(installed / "topologies", ec)) return installed.string();
  }
  return kSourceDir;
}

}  // namespace stepsim::cli
