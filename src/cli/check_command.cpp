#include "src/cli/check_command.hpp"
#include "src/cli/data_dir.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "src/cli/check_scenario.hpp"
#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/topology/topology_metrics.hpp"

namespace stepsim::cli {
namespace {

constexpr int kDefaultParts = 4;
// Largest estimated footprint `check` builds to measure (bytes).
constexpr double kMeasureMemoryLimit = 1 << 30;

std::string ratio(DataRate a, DataRate b) {
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%.3g:1",
      static_cast<double>(a.bits_per_second()) / static_cast<double>(b.bits_per_second()));
  return buf;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string range(const std::string& lo, const std::string& hi) {
  return lo == hi ? lo : lo + "-" + hi;
}

void print_counts(const topology::Topology& topo) {
  const std::size_t servers = topo.server_count();
  if (topo.servers_per_domain > 1) {
    // Each server node is an NVLink domain of servers_per_domain servers.
    std::printf("servers           %zu (in %zu NVLink domains of %zu GPUs, %u servers each)\n",
                servers * topo.servers_per_domain, servers,
                servers > 0 ? topo.gpu_count() / servers : 0, topo.servers_per_domain);
  } else {
    std::printf("servers           %zu\n", servers);
  }
  std::printf("GPUs              %zu\n", topo.gpu_count());
  std::printf("NICs              %zu (cabled server ports)\n", topo.nic_count());
  std::vector<std::string> per_tier;
  for (const topology::TierLoad& t : topology::tier_loads(topo)) {
    per_tier.push_back(std::to_string(t.switches) + " " + topo.tier_name(t.tier));
  }
  const std::size_t planes = topology::plane_count(topo);
  std::printf("switches          %zu in %zu plane%s: %s\n", topo.switch_count(), planes,
              planes == 1 ? "" : "s", join(per_tier, ", ").c_str());
  std::printf("links             %zu\n", topo.links.size());
  for (const topology::LinkClassStats& c : topology::link_class_stats(topo)) {
    std::vector<std::string> cables;
    for (const topology::CableKind k : c.cables) cables.emplace_back(topology::to_string(k));
    std::printf("  %-14s %7zu x %-5s %-6s %-6s latency %-8s capacity %s\n",
                topo.link_class_name(c.link_class).c_str(), c.links, join(c.ports, "/").c_str(),
                join(cables, "/").c_str(),
                range(to_string(c.min_length), to_string(c.max_length)).c_str(),
                range(to_string(c.min_latency), to_string(c.max_latency)).c_str(),
                to_string(c.capacity).c_str());
  }
}

void print_fabric(const topology::Topology& topo) {
  const topology::Bisection b = topology::bisection(topo);
  std::printf("bisection         %s = %s of what servers [0, %zu) inject (%s)\n",
              to_string(b.capacity).c_str(),
              percent(b.capacity.bits_per_second(), b.injection.bits_per_second()).c_str(),
              b.first_half, to_string(b.injection).c_str());
  std::printf(
      "                  (smallest tier cut between the two halves of the servers, "
      "summed over planes)\n");
  std::vector<std::string> over;
  for (const topology::TierLoad& t : topology::tier_loads(topo)) {
    const std::string name = topo.tier_name(t.tier);
    if (t.up.bits_per_second() > 0) {
      over.push_back(name + " down:up " + ratio(t.down, t.up));
    } else if (t.global.bits_per_second() > 0) {
      over.push_back(name + " down:global " + ratio(t.down, t.global));
    }
  }
  std::printf("oversubscription  %s\n",
              over.empty() ? "none (no uplinks)" : join(over, ", ").c_str());
  const topology::Diameter d = topology::server_diameter(topo);
  if (!d.computed) {
    std::printf(
        "diameter          not computed (too large for a search from every server group)\n");
  } else if (!d.connected) {
    std::printf("diameter          disconnected: some servers cannot reach each other\n");
  } else if (d.links == 0) {
    std::printf("diameter          0 (fewer than two servers)\n");
  } else {
    std::printf("diameter          %u links server to server (%u switch%s on the path), by BFS\n",
                d.links, d.links - 1, d.links == 2 ? "" : "es");
  }
}

// What the fabric model holds per LP before any traffic (default parameters): per-flow state
// and queued packets come only with traffic, so this is an idle fabric's footprint.
void print_memory(const topology::Topology& topo, int parts) {
  const MemoryEstimate e = estimate_fabric_memory(topo);
  std::printf(
      "memory estimate   %.1f MiB on every rank (topology, routing) + %.1f MiB of LP "
      "state over %d rank%s\n",
      e.replicated_bytes / (1 << 20), e.lp_bytes / (1 << 20), parts, parts == 1 ? "" : "s");
  // Measuring builds the routing tables and every LP: only where that takes seconds.
  if (e.replicated_bytes + e.lp_bytes > kMeasureMemoryLimit) {
    std::printf("memory            not measured (estimate above %.0f MiB)\n",
                kMeasureMemoryLimit / (1 << 20));
    return;
  }
  const fabric::Routing routing(topo);
  const fabric::FabricParams defaults;
  fabric::FabricModel model(topo, routing, {}, defaults);
  std::vector<pdes::LpId> all(topo.nodes.size());
  for (pdes::LpId v = 0; v < all.size(); ++v) all[v] = v;
  model.setup(all);
  double server_bytes = 0;
  double switch_bytes = 0;
  std::size_t servers = 0;
  for (pdes::LpId v = 0; v < all.size(); ++v) {
    const auto b = static_cast<double>(model.lp_memory_bytes(v));
    if (topo.is_server(v)) {
      server_bytes += b;
      ++servers;
    } else {
      switch_bytes += b;
    }
  }
  const std::size_t switches = all.size() - servers;
  std::printf(
      "memory            %.0f B per server LP, %.0f B per switch LP (idle fabric state); "
      "routing tables %s per rank\n",
      servers > 0 ? server_bytes / static_cast<double>(servers) : 0.0,
      switches > 0 ? switch_bytes / static_cast<double>(switches) : 0.0,
      to_string(Bytes(static_cast<std::int64_t>(routing.memory_bytes()))).c_str());
}

}  // namespace

CheckCommand::CheckCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "check",
      "Load a topology file and print its servers, switches, links, bisection "
      "bandwidth, oversubscription, diameter, lookahead and partition quality; or load a "
      "scenario and print each pipeline stage's GPU memory, without simulating");
  cmd_->add_option("file", file_,
                   "Topology file (YAML, see docs/topology.md) or scenario (docs/workload.md)")
      ->required();
  cmd_->add_option("--set", sets_, "A scenario's key=value override (repeatable)");
  cmd_->add_option("--ranks", parts_,
                   "Ranks to partition the LPs onto (default: this run's MPI ranks if more "
                   "than one, else 4)")
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option(
      "--partition", partition_,
      "Partitioner to evaluate (" + list_words(partition_choices()) + "; default: all of them)");
  for (CLI::Option* opt : cmd_->get_options()) {
    if (opt->get_name() != "--set") opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

int CheckCommand::execute(int rank, int ranks) {
  // A shipped scenario or topology by its name, from any directory (src/cli/data_dir.hpp).
  if (const std::string w = find_data_file(file_, "workloads"); w != file_) {
    file_ = w;
  } else {
    file_ = find_data_file(file_, "topologies");
  }
  if (is_scenario_file(file_)) return check_scenario(file_, sets_, rank, ranks);
  if (!sets_.empty()) return user_error(rank, "--set: " + file_ + " is a topology, not a scenario");
  std::vector<std::string> partitioners = pdes::partitioner_names();
  if (!partition_.empty()) {
    const auto p = pdes::make_partitioner(partition_);
    if (!p) return user_error(rank, "--partition: " + p.error().message);
    partitioners = {partition_};
  }
  // The estimate from the topology's counts, before it is built: a huge one is refused at once.
  const auto loaded = load_topology_within_memory(file_, ranks, true);
  if (!loaded) return user_error(rank, not_found_note(loaded.error(), file_, "topologies").message);
  if (rank != 0) return kExitOk;
  const topology::Topology& topo = *loaded;
  const int parts = parts_ > 0 ? parts_ : ranks > 1 ? ranks : kDefaultParts;

  std::printf("topology          %s (%s) from %s\n", topo.name.c_str(), topo.generator.c_str(),
              file_.c_str());
  print_counts(topo);
  print_fabric(topo);
  const pdes::LpGraph graph = topo.lp_graph();
  std::printf("lookahead         %s (smallest link latency)\n",
              to_string(graph.min_latency()).c_str());
  std::printf("partition         %d ranks, %u LPs (one per server and switch), %zu channels\n",
              parts, graph.size(), graph.edge_count());
  for (const std::string& name : partitioners) {
    const auto owner = pdes::make_partitioner(name).value()->partition(graph, parts);
    const auto q = pdes::evaluate_partition(graph, owner, parts);
    if (!q) {
      // A partitioner's weakness on this graph (e.g. an empty part), reported, not fatal.
      std::printf("  %-8s        unusable: %s\n", name.c_str(), q.error().message.c_str());
      continue;
    }
    std::size_t cut_links = 0;
    for (const topology::Link& l : topo.links) {
      cut_links += owner[topo.ports[l.a].node] != owner[topo.ports[l.b].node] ? 1 : 0;
    }
    std::printf(
        "  %-8s        cut %zu links (%s), %s of traffic weight; imbalance %.3f\n", name.c_str(),
        cut_links,
        percent(static_cast<std::int64_t>(cut_links), static_cast<std::int64_t>(topo.links.size()))
            .c_str(),
        percent(q->cut_weight, q->total_weight).c_str(), q->imbalance);
  }
  print_memory(topo, parts);
  return kExitOk;
}

}  // namespace stepsim::cli
