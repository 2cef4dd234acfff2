#include "stepsim/topology/topology.hpp"

#include "stepsim/core/fatal.hpp"

namespace stepsim::topology {

SimTime cable_latency(const PhyParams& phy, CableKind cable, Length length) {
  switch (cable) {
    case CableKind::kDac:
      return length.delay(phy.dac_per_metre) + phy.phy_latency;
    case CableKind::kAoc:
      return length.delay(phy.per_metre) + phy.phy_latency;
    case CableKind::kOptics:
      return length.delay(phy.per_metre) + phy.phy_latency + phy.dsp_latency * 2;
  }
  return SimTime::never();
}

const char* to_string(CableKind c) {
  switch (c) {
    case CableKind::kDac:
      return "dac";
    case CableKind::kAoc:
      return "aoc";
    case CableKind::kOptics:
      return "optics";
  }
  return "?";
}

NodeId Topology::add_node(NodeKind kind, std::uint8_t tier, std::uint32_t port_count,
                          std::uint32_t group, std::uint16_t plane, std::uint32_t gpus) {
  Node n;
  n.kind = kind;
  n.tier = tier;
  n.group = group;
  n.plane = plane;
  n.gpus = gpus;
  n.first_port = static_cast<PortId>(ports.size());
  n.port_count = port_count;
  const auto id = static_cast<NodeId>(nodes.size());
  nodes.push_back(n);
  for (std::uint32_t i = 0; i < port_count; ++i) ports.push_back(Port{id, i, kNone, kNone});
  return id;
}

LinkId Topology::connect(NodeId a, std::uint32_t pa, NodeId b, std::uint32_t pb,
                         std::uint16_t port_type, CableKind cable, Length length, double ber) {
  STEPSIM_CHECK(a < nodes.size() && b < nodes.size() && a != b, "bad link endpoints");
  STEPSIM_CHECK(pa < nodes[a].port_count && pb < nodes[b].port_count,
                "link to a port the node does not have");
  const PortId x = port_id(a, pa);
  const PortId y = port_id(b, pb);
  STEPSIM_CHECK(ports[x].link == kNone && ports[y].link == kNone, "port cabled twice");
  STEPSIM_CHECK(port_type < port_types.size(), "unknown port type");
  Link l;
  l.a = x;
  l.b = y;
  l.port_type = port_type;
  l.cable = cable;
  l.length = length;
  l.latency = cable_latency(phy, cable, length);
  l.ber = ber;
  const auto id = static_cast<LinkId>(links.size());
  links.push_back(l);
  ports[x].link = ports[y].link = id;
  ports[x].peer = y;
  ports[y].peer = x;
  return id;
}

LinkId Topology::connect(NodeId a, std::uint32_t pa, NodeId b, std::uint32_t pb,
                         const LinkSpec& spec) {
  const LinkId id = connect(a, pa, b, pb, spec.port_type, spec.cable, spec.length, spec.ber);
  links[id].link_class = spec.link_class;
  return id;
}

std::size_t Topology::server_count() const {
  std::size_t n = 0;
  for (const Node& x : nodes) n += x.kind == NodeKind::kServer ? 1 : 0;
  return n;
}

std::size_t Topology::switch_count() const {
  return nodes.size() - server_count();
}

std::size_t Topology::gpu_count() const {
  std::size_t n = 0;
  for (const Node& x : nodes) n += x.gpus;
  return n;
}

std::size_t Topology::nic_count() const {
  std::size_t n = 0;
  for (const Node& x : nodes) {
    if (x.kind != NodeKind::kServer) continue;
    for (std::uint32_t i = 0; i < x.port_count; ++i) n += ports[x.first_port + i].link != kNone;
  }
  return n;
}

std::string Topology::tier_name(std::uint8_t tier) const {
  return tier < tier_names.size() ? tier_names[tier] : "tier " + std::to_string(tier);
}

std::string Topology::link_class_name(std::uint8_t c) const {
  return c < link_classes.size() ? link_classes[c] : "class " + std::to_string(c);
}

pdes::LpGraph Topology::lp_graph() const {
  pdes::LpGraph g(static_cast<pdes::LpId>(nodes.size()), name);
  for (const Link& l : links) {
    g.add_edge(
        ports[l.a].node, ports[l.b].node, l.latency,
        std::max<std::int64_t>(
            1, link_rate(static_cast<LinkId>(&l - links.data())).bits_per_second() / 1000'000'000));
  }
  for (NodeId n = 0; n < nodes.size(); ++n) {
    // Expected load of an LP grows with its ports.
    g.set_vertex_weight(n, std::max<std::int64_t>(1, nodes[n].port_count));
    g.set_vertex_tier(n, is_server(n) ? 0 : std::max<std::uint8_t>(1, nodes[n].tier));
  }
  g.finalize();
  return g;
}

std::string find_wiring_error(const Topology& topo) {
  for (NodeId n = 0; n < topo.nodes.size(); ++n) {
    const Node& node = topo.nodes[n];
    if (std::uint64_t{node.first_port} + node.port_count > topo.ports.size()) {
      return "node " + std::to_string(n) + " has ports beyond the port table";
    }
    for (std::uint32_t i = 0; i < node.port_count; ++i) {
      const PortId p = node.first_port + i;
      const Port& port = topo.ports[p];
      if (port.node != n || port.index != i) {
        return "port " + std::to_string(p) + " does not know it is port " + std::to_string(i) +
               " of node " + std::to_string(n);
      }
      if (port.link == kNone) {
        if (port.peer != kNone) return "port " + std::to_string(p) + " has a peer but no link";
        continue;
      }
      if (port.link >= topo.links.size() || port.peer >= topo.ports.size()) {
        return "port " + std::to_string(p) + " refers to a link or peer that does not exist";
      }
      const Port& peer = topo.ports[port.peer];
      if (peer.peer != p || peer.link != port.link) {
        return "port " + std::to_string(p) + " and its peer " + std::to_string(port.peer) +
               " disagree";
      }
      const Link& l = topo.links[port.link];
      if (!((l.a == p && l.b == port.peer) || (l.b == p && l.a == port.peer))) {
        return "link " + std::to_string(port.link) + " does not join port " + std::to_string(p) +
               " and its peer";
      }
      if (node.kind == NodeKind::kServer && topo.is_server(peer.node)) {
        return "server " + std::to_string(n) + " is cabled to server " + std::to_string(peer.node);
      }
    }
  }
  for (LinkId id = 0; id < topo.links.size(); ++id) {
    const Link& l = topo.links[id];
    if (l.a >= topo.ports.size() || l.b >= topo.ports.size() || topo.ports[l.a].link != id ||
        topo.ports[l.b].link != id) {
      return "link " + std::to_string(id) + " is not recorded on both of its ports";
    }
    if (topo.ports[l.a].node == topo.ports[l.b].node) {
      return "link " + std::to_string(id) + " loops back to its own node";
    }
    if (l.port_type >= topo.port_types.size()) {
      return "link " + std::to_string(id) + " has an unknown port type";
    }
    if (!topo.link_classes.empty() && l.link_class >= topo.link_classes.size()) {
      return "link " + std::to_string(id) + " has an unknown link class";
    }
  }
  return "";
}

}  // namespace stepsim::topology
