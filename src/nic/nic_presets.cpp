// The shipped NICs. ConnectX-7: NVIDIA ConnectX-7 data sheet (one 400 Gb/s port, PCIe Gen5
// x16 host interface; the NIC of DGX H100 and GB200 NVL72's compute trays). ConnectX-8: NVIDIA
// ConnectX-8 SuperNIC data sheet (800 Gb/s, PCIe Gen6 x16 to the host; the NIC of GB300 NVL72).
// The 1.6T NIC is the design of DOMAIN's seed (1.6T port of 8 x 200G lanes); its seed names a
// Gen5/Gen6 x16 host interface, which carries under 1 Tb/s (Gen6 x16: 64 GT/s x 16 lanes, FLIT
// mode), so the preset takes Gen6 x32, the smallest Gen6 link that keeps up with the port.
#include "stepsim/nic/nic_presets.hpp"

#include "stepsim/phy/port_rate.hpp"

namespace stepsim::nic {

const std::vector<NicPreset>& nic_presets() {
  static const std::vector<NicPreset> presets = {
      {"cx7", "NVIDIA ConnectX-7, 400G, PCIe Gen5 x16", "400G", 5, 16},
      {"cx8", "NVIDIA ConnectX-8 SuperNIC, 800G, PCIe Gen6 x16", "800G", 6, 16},
      {"nic-1.6t", "1.6T NIC (8 x 200G lanes), PCIe Gen6 x32", "1.6T", 6, 32},
  };
  return presets;
}

Result<NicPreset> nic_preset(const std::string& name) {
  std::string names;
  for (const NicPreset& n : nic_presets()) {
    if (n.name == name) return n;
    names += (names.empty() ? "" : ", ") + n.name;
  }
  return Error{"unknown NIC '" + name + "' (allowed: " + names + ")"};
}

Result<bool> check_nic_model(const std::string& model, const topology::Topology& topo) {
  if (model.empty()) return true;
  const auto n = nic_preset(model);
  if (!n) return Error{"nic.model: " + n.error().message};
  const auto port = phy::standard_port(n->port);
  if (!port) return Error{"nic.model " + model + ": " + port.error().message};
  for (topology::LinkId l = 0; l < topo.links.size(); ++l) {
    const topology::Link& k = topo.links[l];
    if (!topo.is_server(topo.ports[k.a].node) && !topo.is_server(topo.ports[k.b].node)) continue;
    const phy::PortSpec& have = topo.port_types[k.port_type];
    if (have.data_rate() != port->data_rate()) {
      return Error{"nic.model " + model + ": a " + n->port + " NIC, but the topology's server " +
                   "links are " + have.name + " (pick the NIC of that speed, or a topology whose " +
                   "server links are " + n->port + ")"};
    }
  }
  return true;
}

}  // namespace stepsim::nic
