#include "src/cli/input_checks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "stepsim/core/memory.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

CLI::Validator finite_range(double lo, double hi) {
  std::ostringstream desc;
  desc << "FLOAT in [" << lo << " - " << hi << "]";
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(input, v)) return "'" + input + "' is not a number";
        if (!std::isfinite(v) || v < lo || v > hi) {
          std::ostringstream s;
          s << "Value " << input << " not in range [" << lo << " - " << hi << "]";
          return s.str();
        }
        return {};
      },
      desc.str(), "FINITE_RANGE");
}

namespace {

// A unit option parsed by `parse` and checked against [lo, hi] (`range` says it in words); the
// error names the option.
template <class T, class Parse>
Result<T> ranged_option(const std::string& option, const std::string& text, Parse parse, T lo, T hi,
                        const std::string& range) {
  auto v = parse(text);
  if (!v) return Error{option + ": " + v.error().message};
  if (*v < lo || *v > hi) return Error{option + ": '" + text + "' is out of range (" + range + ")"};
  return *v;
}

template <class T>
std::string range_of(T lo, T hi) {
  return to_string(lo) + ".." + to_string(hi);
}

}  // namespace

Result<SimTime> time_option(const std::string& option, const std::string& text, SimTime lo,
                            SimTime hi) {
  return ranged_option(option, text, parse_time, lo, hi, range_of(lo, hi));
}

Result<Bytes> bytes_option(const std::string& option, const std::string& text, std::int64_t lo,
                           std::int64_t hi) {
  return ranged_option(option, text, parse_bytes, Bytes(lo), Bytes(hi),
                       std::to_string(lo) + ".." + std::to_string(hi) + " bytes");
}

Result<DataRate> rate_option(const std::string& option, const std::string& text, DataRate lo,
                             DataRate hi) {
  return ranged_option(option, text, parse_rate, lo, hi, range_of(lo, hi));
}

Result<Length> length_option(const std::string& option, const std::string& text, Length lo,
                             Length hi) {
  return ranged_option(option, text, parse_length, lo, hi, range_of(lo, hi));
}

Result<std::vector<std::uint32_t>> gpu_list_option(const std::string& option,
                                                   const std::string& text,
                                                   const std::vector<bool>& allowed,
                                                   const std::string& allowed_text) {
  const Error bad{option + ": '" + text +
                  "' is not a list of GPUs (GPUs and ranges joined by commas, e.g. 0-7,64)"};
  const auto number = [](const std::string& t) -> std::int64_t {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
      return -1;
    }
    return std::stoll(t);
  };
  std::vector<bool> in(allowed.size(), false);
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const std::int64_t lo = number(item.substr(0, dash));
    const std::int64_t hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (lo < 0 || hi < lo) return bad;
    for (std::int64_t g = lo; g <= hi; ++g) {
      if (static_cast<std::uint64_t>(g) >= allowed.size() ||
          !allowed[static_cast<std::size_t>(g)]) {
        return Error{option + ": GPU " + std::to_string(g) + " of '" + text +
                     "' is not one the step runs (" + allowed_text + ")"};
      }
      in[static_cast<std::size_t>(g)] = true;
    }
    pos = comma + 1;
  }
  std::vector<std::uint32_t> gpus;
  for (std::size_t g = 0; g < in.size(); ++g) {
    if (in[g]) gpus.push_back(static_cast<std::uint32_t>(g));
  }
  return gpus;
}

void add_output(std::vector<OutputFile>& outputs, const CLI::App& cmd, const std::string& option,
                const std::string& path) {
  if (cmd.count(option) > 0 || !path.empty()) outputs.push_back({option, path});
}

Result<bool> check_outputs(const std::vector<OutputFile>& outputs,
                           const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputFile& o = outputs[i];
    if (o.path.empty()) return Error{o.option + ": the file name is empty"};
    std::error_code ec;
    if (fs::is_directory(o.path, ec)) {
      return Error{o.option + ": '" + o.path + "' is a directory, not a file"};
    }
    const fs::path abs = fs::absolute(o.path, ec).lexically_normal();
    for (std::size_t j = 0; j < i; ++j) {
      if (fs::absolute(outputs[j].path, ec).lexically_normal() == abs ||
          fs::equivalent(outputs[j].path, o.path, ec)) {
        return Error{o.option + " and " + outputs[j].option + " name the same file '" + o.path +
                     "'; give each output its own file"};
      }
    }
    for (const std::string& in : inputs) {
      if (!in.empty() && fs::exists(in, ec) && fs::equivalent(in, o.path, ec)) {
        return Error{o.option + ": '" + o.path + "' is the input file '" + in +
                     "'; writing it would replace the input"};
      }
    }
    // Create (and remove) a new file; open an existing one without truncating it.
    int fd = ::open(o.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const bool created = fd >= 0;
    if (!created && errno == EEXIST) fd = ::open(o.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
      return Error{o.option + ": cannot write '" + o.path + "': " + std::strerror(errno)};
    }
    ::close(fd);
    if (created) ::unlink(o.path.c_str());
  }
  return true;
}

double lp_port_bytes() {
  return static_cast<double>(fabric::FabricModel::port_state_bytes() +
                             fabric::FabricModel::queued_packet_bytes());
}

MemoryEstimate estimate_fabric_memory(const topology::Topology& topo) {
  return estimate_fabric_memory(topology::count_topology(topo));
}

double topology_bytes(const topology::TopologyCounts& c) {
  return static_cast<double>(c.nodes()) * sizeof(topology::Node) +
         static_cast<double>(c.ports) * sizeof(topology::Port) +
         static_cast<double>(c.links) * sizeof(topology::Link);
}

MemoryEstimate estimate_fabric_memory(const topology::TopologyCounts& c) {
  MemoryEstimate e;
  const auto switches = static_cast<double>(c.switches);
  const auto edges = static_cast<double>(c.edge_switches);
  const auto nodes = static_cast<double>(c.nodes());
  const auto ports = static_cast<double>(c.ports);
  e.replicated_bytes = topology_bytes(c) + switches * edges * kRoutingEntryBytes +
                       ports * 32;                              // routing's per-port information
  e.lp_bytes = nodes * kLpBaseBytes + ports * lp_port_bytes();  // cabled or not
  return e;
}

namespace {

// What a memory refusal names: the topology, its counts, the ranks of this node.
std::string counts_text(const std::string& name, const topology::TopologyCounts& c, int local) {
  char what[512];
  std::snprintf(what, sizeof what,
                "%s (%llu servers, %llu switches, %llu links) on %d rank%s of this node",
                name.c_str(), static_cast<unsigned long long>(c.servers),
                static_cast<unsigned long long>(c.switches),
                static_cast<unsigned long long>(c.links), local, local == 1 ? "" : "s");
  return what;
}

}  // namespace

Result<bool> check_fabric_memory(const topology::Topology& topo, int ranks) {
  const MemoryEstimate e = estimate_fabric_memory(topo);
  const int local = std::min(std::max(1, ranks), local_rank_count());
  return agree_on_all_ranks(
      check_memory(e.per_node(std::max(1, ranks), local),
                   counts_text(topo.name, topology::count_topology(topo), local)));
}

Result<topology::Topology> load_topology_within_memory(const std::string& path, int ranks,
                                                       bool fabric) {
  auto spec = topology::load_topology_spec(path);
  Result<bool> fits = true;
  if (spec) {
    // A description the counts refuse is left to the build, which says why in its own order.
    if (auto c = topology::topology_counts(*spec)) {
      const std::string name =
          !spec->name.empty() ? spec->name : std::filesystem::path(path).stem().string();
      const int local = std::min(std::max(1, ranks), local_rank_count());
      const double bytes = fabric ? estimate_fabric_memory(*c).per_node(std::max(1, ranks), local)
                                  : local * topology_bytes(*c);
      fits = check_memory(bytes, counts_text(name, *c, local));
    }
  }
  if (auto ok = agree_on_all_ranks(fits); !ok) return ok.error();
  if (!spec) return spec.error();
  return topology::generate_topology(*spec);
}

Result<bool> agree_on_all_ranks(const Result<bool>& mine) {
  if (pdes::all_ranks_ok(mine.ok())) return true;
  if (!mine) return mine;
  return Error{"another rank refused the run (its message is printed by that rank only)"};
}

Result<bool> check_outputs_once(const std::vector<OutputFile>& outputs,
                                const std::vector<std::string>& inputs, int rank) {
  return agree_on_all_ranks(rank == 0 ? check_outputs(outputs, inputs) : Result<bool>(true));
}

Result<bool> check_memory(double estimate_bytes, const std::string& what) {
  return check_memory_estimate(estimate_bytes, what);
}

}  // namespace stepsim::cli
