#include "src/cli/list_command.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "src/cli/cli.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology_spec.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {
namespace {

void list_topologies() {
  std::printf("Topology kinds (YAML `topology.kind`). Every kind also takes: ");
  const auto& common = topology::common_topology_keys();
  for (std::size_t i = 0; i < common.size(); ++i) {
    std::printf("%s%s", i == 0 ? "" : ", ", common[i].c_str());
  }
  std::printf(" (docs/topology.md).\n");
  for (const std::string& kind : topology::generator_names()) {
    const topology::Generator& g = *topology::find_generator(kind).value();
    std::printf("\n%s: %s\n  parameter                default    range           meaning\n",
                kind.c_str(), g.description().c_str());
    for (const topology::ParamSpec& p : g.params()) {
      const std::string def = p.default_value ? std::to_string(*p.default_value)
                              : p.required()  ? "required"
                                              : "derived";
      const std::string range = std::to_string(p.min) + ".." + std::to_string(p.max);
      std::printf("  %-24s %-10s %-15s %s%s%s\n", p.name.c_str(), def.c_str(), range.c_str(),
                  p.description.c_str(), p.derived_default.empty() ? "" : "; default ",
                  p.derived_default.c_str());
    }
    std::printf("  link class (topology.cables.<class>)  default cable\n");
    for (const topology::LinkClassSpec& c : g.link_classes()) {
      std::printf("  %-24s %-6s %-8s %s\n", c.name.c_str(), topology::to_string(c.cable),
                  to_string(c.length).c_str(), c.description.c_str());
    }
  }
}

// Prints the keys of `table` under `prefix` with their defaults and meaning.
void print_params(const config::ParamTable& table, const std::string& prefix) {
  for (const config::Param& p : table.params()) {
    if (p.key.rfind(prefix, 0) != 0) continue;
    std::printf("  %-40s %-12s %s\n", p.key.c_str(), p.get().c_str(), p.help.c_str());
  }
}

// Prints each registered part with its description and the keys it declares (in `table`).
void print_registry(const std::vector<RegistryInfo>& parts, const config::ParamTable& table) {
  for (const RegistryInfo& r : parts) {
    std::string traits;
    for (const std::string& t : r.traits) traits += (traits.empty() ? " (" : "; ") + t;
    if (!traits.empty()) traits += ")";
    std::printf("  %-10s %s%s\n", r.name.c_str(), r.description.c_str(), traits.c_str());
    for (const std::string& key : r.params) print_params(table, key);
  }
}

void list_load_balancers() {
  fabric::FabricParams d;
  std::printf(
      "Load-balancing policies (fabric.lb, `stepsim bench fabric --lb`; docs/fabric.md), with "
      "the parameters each reads (key, default, meaning):\n");
  print_registry(fabric::load_balancers(), fabric::fabric_param_table(d));
}

void list_partitioners() {
  std::printf("Partitioners (--partition; docs/engine.md):\n");
  print_registry(pdes::partitioners(), config::ParamTable{});
}

void list_fabric() {
  fabric::FabricParams d;
  std::printf(
      "Fabric parameters (key, default, meaning; docs/fabric.md). Set them in a scenario's "
      "fabric: section, with `stepsim run FILE --set fabric.KEY=VALUE` or `stepsim bench fabric "
      "--set fabric.KEY=VALUE`:\n");
  print_params(fabric::fabric_param_table(d), "fabric.");
}

void list_cc() {
  nic::NicParams d;
  const config::ParamTable table = nic::nic_param_table(d);
  std::printf(
      "Congestion-control algorithms (cc.algorithm; docs/nic.md), with the parameters each reads "
      "(key, default, meaning; set with --set key=value or a --nic-config file):\n");
  print_params(table, "cc.algorithm");
  for (const cc::CcAlgorithmInfo& a : cc::congestion_control_algorithms()) {
    std::printf("  %-10s %s\n", a.name.c_str(), a.description.c_str());
    print_params(table, "cc." + a.name + ".");
  }
}

void list_nic() {
  nic::NicParams d;
  std::printf(
      "NIC and transport parameters (key, default, meaning; docs/nic.md; congestion control: "
      "`stepsim list cc`). Set them with --set key=value or a --nic-config YAML file whose "
      "sections are nic, transport and cc:\n");
  const config::ParamTable table = nic::nic_param_table(d);
  print_params(table, "nic.");
  print_params(table, "transport.");
}

void list_collective() {
  collective::CollectiveParams d;
  std::printf(
      "Collective and GPU parameters (key, default, meaning; docs/collectives.md). Set them with "
      "`stepsim bench nccl ... --set key=value`:\n");
  const config::ParamTable table = collective::collective_param_table(d);
  print_params(table, "coll.");
  print_params(table, "gpu.");
}

void list_algorithms() {
  std::printf(
      "Collective algorithms (coll.algorithm, --algo; docs/collectives.md). `selected by` is the "
      "coll.algorithm value that runs it for its kinds; auto: the tuner's choice among those "
      "marked tuned:\n");
  for (const collective::CollectiveAlgorithm* a : collective::collective_algorithms()) {
    const collective::AlgorithmSupport s = a->support();
    std::string kinds;
    for (collective::Kind k : s.kinds) kinds += (kinds.empty() ? "" : ",") + kind_name(k);
    std::string protocols;
    for (collective::Protocol p : s.protocols) {
      protocols += (protocols.empty() ? "" : ",") + protocol_name(p);
    }
    const char* servers = s.servers == collective::Servers::kOne       ? "one server"
                          : s.servers == collective::Servers::kSeveral ? "2+ whole servers"
                                                                       : "any";
    std::printf("\n%s (selected by %s): %s\n", a->name().c_str(), a->selected_by().c_str(),
                a->description().c_str());
    std::printf("  kinds %s; servers %s; protocols %s%s%s%s%s\n", kinds.c_str(), servers,
                protocols.c_str(), s.needs_nvls ? "; needs NVLS" : "",
                s.needs_sharp ? "; needs SHARP switches" : "", s.tuned ? "; tuned" : "",
                s.concurrent ? "" : "; not concurrent");
  }
}

void list_scenario() {
  workload::Scenario d;
  std::printf(
      "Scenario keys (key, default, meaning; docs/workload.md). A scenario file (workloads/*.yaml) "
      "sets them in sections; `stepsim run FILE --set key=value` overrides any. It also takes "
      "every key of `stepsim list collective` (coll.*) and `stepsim list nic`:\n");
  const config::ParamTable table = workload::scenario_param_table(d);
  // Every key of the table once: the sections (model., parallel., ..., step., output.) in the
  // order the table declares them, then the keys of no section (fidelity, end, ...).
  std::vector<std::string> sections;
  for (const config::Param& p : table.params()) {
    const std::size_t dot = p.key.find('.');
    if (dot == std::string::npos) continue;
    std::string section = p.key.substr(0, dot + 1);
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      sections.push_back(std::move(section));
    }
  }
  for (const std::string& section : sections) print_params(table, section);
  for (const config::Param& p : table.params()) {
    if (p.key.find('.') == std::string::npos) {
      std::printf("  %-40s %-12s %s\n", p.key.c_str(), p.get().c_str(), p.help.c_str());
    }
  }
  std::printf(
      "A file may also list `jobs:` (the whole step, packet or cell fidelity): each a map of "
      "name, gpus (GPU ranges of the topology, e.g. 0-7,16-23) and model, parallel, compute "
      "keys (docs/workload.md); "
      "--set jobs.NAME.KEY=VALUE (or jobs.K.KEY) sets one job's.\n");
}

}  // namespace

ListCommand::ListCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand("list",
                               "List a registry or a parameter table: topologies (generators, "
                               "parameters, link classes), partitioners, lb (load-balancing "
                               "policies and their parameters), "
                               "fabric (fabric parameters and defaults), cc (congestion "
                               "control), nic (NIC parameters and defaults), collective, "
                               "algorithms (collective algorithms) or scenario (the keys of "
                               "stepsim run)");
  cmd_->add_option("what", what_, "What to list")
      ->required()
      ->check(CLI::IsMember({"topologies", "partitioners", "lb", "fabric", "cc", "nic",
                             "collective", "algorithms", "scenario"}));
}

int ListCommand::execute(int rank) {
  if (rank != 0) return kExitOk;
  if (what_ == "topologies") {
    list_topologies();
  } else if (what_ == "lb") {
    list_load_balancers();
  } else if (what_ == "fabric") {
    list_fabric();
  } else if (what_ == "cc") {
    list_cc();
  } else if (what_ == "nic") {
    list_nic();
  } else if (what_ == "collective") {
    list_collective();
  } else if (what_ == "algorithms") {
    list_algorithms();
  } else if (what_ == "scenario") {
    list_scenario();
  } else {
    list_partitioners();
  }
  return kExitOk;
}

}  // namespace stepsim::cli
