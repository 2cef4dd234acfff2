#pragma once
/// The shipped NICs: port speed and PCIe host link of each, from the vendors' data sheets.
/// `nic.model` in a scenario picks one: it fixes `nic.pcie` to the NIC's link and must match
/// the rate of the topology's server links.
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

struct NicPreset {
  std::string name;         ///< the `nic.model` value
  std::string description;  ///< product, for listings
  std::string port;         ///< phy::standard_port name of its network port
  int pcie_gen = 5;         ///< host link generation
  int pcie_lanes = 16;      ///< host link width
};

/// cx7 (ConnectX-7, 400G, Gen5 x16), cx8 (ConnectX-8 SuperNIC, 800G, Gen6 x16), nic-1.6t (a
/// 1.6T NIC on Gen6 x32).
const std::vector<NicPreset>& nic_presets();
/// A shipped NIC by name; the error lists the names.
Result<NicPreset> nic_preset(const std::string& name);
/// Checks that the shipped NIC `model` ("" passes) has the rate of every server link of `topo`;
/// the error names nic.model, the NIC's port and the links' rate.
Result<bool> check_nic_model(const std::string& model, const topology::Topology& topo);

}  // namespace stepsim::nic
