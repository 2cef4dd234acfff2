#include "src/cli/list_command.hpp"

#include <cstdio>

#include "src/cli/cli.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology_spec.hpp"

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

}  // namespace

ListCommand::ListCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand("list",
                               "List a registry: topologies (generators, parameters, "
                               "link classes) or partitioners");
  cmd_->add_option("what", what_, "What to list")
      ->required()
      ->check(CLI::IsMember({"topologies", "partitioners"}));
}

int ListCommand::execute(int rank) {
  if (rank != 0) return kExitOk;
  if (what_ == "topologies") {
    list_topologies();
  } else {
    for (const std::string& name : pdes::partitioner_names()) std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

}  // namespace stepsim::cli
