#include "src/cli/check_scenario.hpp"
#include "src/cli/data_dir.hpp"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include <cstdio>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/memory_report.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

bool is_scenario_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // the loader says what it is
  try {
    const YAML::Node doc = YAML::LoadFile(path);
    return doc.IsMap() && (doc["model"] || doc["parallel"] || doc["jobs"]);
  } catch (const YAML::Exception&) {
    return false;  // the topology loader reports what is wrong with the file
  }
}

int check_scenario(const std::string& path, const std::vector<std::string>& sets, int rank,
                   int ranks) {
  auto loaded = load_scenario_file(path, sets);
  if (!loaded) return user_error(rank, loaded.error().message);
  const workload::Scenario& s = *loaded;
  // The topology's own memory from its counts first (nothing is simulated here).
  auto topo = load_topology_within_memory(s.topology, ranks, false);
  if (!topo) {
    return user_error(
        rank, "topology: " + not_found_note(topo.error(), s.topology, "topologies").message);
  }
  if (auto ok = workload::validate(s, *topo); !ok) return user_error(rank, ok.error().message);
  const std::vector<JobMemory> m = scenario_memory(s);
  if (rank == 0) {
    const workload::Parallelism& p = s.par;
    std::printf("scenario          %s: %s on %s, %d GPUs %s\n", path.c_str(), s.model.name.c_str(),
                topo->name.c_str(), p.world(), s.gpu.name.c_str());
    std::printf(
        "layout            TP %d, PP %d x %d, CP %d, EP %d, DP %d, micro-batch %lld, "
        "ZeRO %d, recompute %s\n",
        p.tp, p.pp, p.vpp, p.cp, p.ep, p.data_parallel(), static_cast<long long>(p.micro_batch),
        p.zero, p.recompute.c_str());
    print_memory(s, m, true);
  }
  if (auto ok = check_gpu_memory(s, m, rank); !ok) return user_error(rank, ok.error().message);
  return kExitOk;
}

}  // namespace stepsim::cli
