#include "src/cli/data_dir.hpp"

#include <filesystem>
#include <system_error>

#include "stepsim/version.hpp"

namespace stepsim::cli {
namespace {

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

// A path taken as it is: empty, absolute, or there. Otherwise the data directory may have it.
bool as_given(const std::string& path) {
  std::error_code ec;
  return path.empty() || std::filesystem::path(path).is_absolute() ||
         std::filesystem::exists(path, ec);
}

}  // namespace

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

std::string find_data_file(const std::string& path, const std::string& subdir) {
  if (as_given(path)) return path;
  const std::filesystem::path p(path);
  const std::filesystem::path data(data_dir());
  for (const std::filesystem::path& c : {data / p, data / subdir / p}) {
    if (is_file(c)) return c.lexically_normal().string();
  }
  return path;
}

Error not_found_note(Error e, const std::string& path, const std::string& subdir) {
  if (as_given(path) || e.message.find("no such file") == std::string::npos) return e;
  const std::filesystem::path data(data_dir());
  e.message += " (looked in the current directory, " + data.string() + " and " +
               (data / subdir).string() + ")";
  return e;
}

Result<workload::Scenario> load_scenario_file(const std::string& path,
                                              const std::vector<std::string>& sets) {
  auto loaded = workload::load_scenario(find_data_file(path, "workloads"), sets);
  if (!loaded) return not_found_note(loaded.error(), path, "workloads");
  workload::Scenario s = std::move(loaded).value();
  // A --set topology=NAME found neither here nor beside the scenario: the shipped one.
  std::error_code ec;
  if (!std::filesystem::exists(s.topology, ec)) {
    for (auto kv = sets.rbegin(); kv != sets.rend(); ++kv) {
      if (!kv->starts_with("topology=")) continue;
      const std::string named = kv->substr(9);
      if (const std::string found = find_data_file(named, "topologies"); found != named) {
        s.topology = found;
      }
      break;
    }
  }
  return s;
}

}  // namespace stepsim::cli
