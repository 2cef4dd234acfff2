#include "src/cli/choices.hpp"

#include "stepsim/core/units.hpp"
#include "stepsim/fabric/fabric_params.hpp"

#include "src/nic/retransmission_strategy.hpp"
#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/fabric/traffic.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {

std::string list_words(const std::vector<std::string>& names, const std::string& last) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " " + last + " " : ", ";
    out += names[i];
  }
  return out;
}

std::vector<std::string> cc_choices() {
  return cc::congestion_control_names();
}
std::vector<std::string> lb_choices() {
  return fabric::load_balancer_names();
}
std::vector<std::string> retransmission_choices() {
  std::vector<std::string> out = nic::retransmission_names();
  out.insert(out.begin(), "auto");
  return out;
}

std::vector<std::string> algorithm_choices() {
  std::vector<std::string> out = collective::selectable_algorithms();
  out.emplace_back("auto");
  return out;
}

std::vector<std::string> protocol_choices() {
  collective::CollectiveParams p;
  return collective::collective_param_table(p).choices("coll.protocol");
}

std::vector<std::string> gpu_choices() {
  return gpu::gpu_preset_names();
}

std::vector<std::string> partition_choices() {
  return pdes::partitioner_names();
}

std::vector<std::string> fidelity_choices() {
  workload::Scenario defaults;
  return workload::scenario_param_table(defaults).choices("fidelity");
}

std::vector<std::string> topology_choices() {
  return topology::generator_names();
}

std::vector<std::string> background_choices() {
  std::vector<std::string> out;
  for (const std::string& p : fabric::traffic_patterns()) {
    if (p != "pair") out.push_back(p);
  }
  return out;
}

std::string fidelity_help(const std::vector<std::string>& names) {
  const fabric::FabricParams fabric;
  std::vector<std::string> parts;
  for (const std::string& n : names) {
    std::string what;
    if (n == "packet") what = "MTU packets";
    if (n == "cell") {
      what = "the same fabric in cells of fabric.cell bytes, " + to_string(fabric.cell_size) +
             " by default";
    }
    if (n == "ideal") what = "NCCL's cost model";
    if (n == "analytical") what = "alpha-beta lower bound";
    parts.push_back(what.empty() ? n : n + " (" + what + ")");
  }
  return list_words(parts);
}

}  // namespace stepsim::cli
