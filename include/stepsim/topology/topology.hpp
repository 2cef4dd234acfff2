#pragma once
/// The cluster as a graph: servers (GPUs and NICs inside) and switches, joined by links between
/// their ports. Every rank builds the same Topology; the engine's LPs are its nodes.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stepsim/core/units.hpp"
#include "stepsim/pdes/lp_graph.hpp"
#include "stepsim/phy/port_rate.hpp"

namespace stepsim::topology {

using NodeId = std::uint32_t;
using PortId = std::uint32_t;
using LinkId = std::uint32_t;
inline constexpr std::uint32_t kNone = 0xffffffffu;

enum class NodeKind : std::uint8_t { kServer, kSwitch };

/// Cable kinds: copper (DAC), active optical (AOC, no DSP), pluggable optics (a DSP module at
/// each end adds latency).
enum class CableKind : std::uint8_t { kDac, kAoc, kOptics };

/// A server or a switch. Server ports are its NICs (port i = NIC i, on rail/plane i when
/// rail-optimized).
struct Node {
  NodeKind kind = NodeKind::kSwitch;
  std::uint8_t tier = 0;    ///< 0 server, 1 leaf/ToR (dragonfly: router), 2 spine/agg, 3 core
  std::uint16_t plane = 0;  ///< rail plane of a switch (rail-optimized), 0 otherwise
  std::uint32_t group = 0;  ///< pod (fat-tree) or group (dragonfly)
  PortId first_port = 0;    ///< ports of the node are [first_port, first_port + port_count)
  std::uint32_t port_count = 0;
  std::uint32_t gpus = 0;  ///< servers: GPUs in the server
};

/// One port of a node, and what it is cabled to.
struct Port {
  NodeId node = kNone;
  std::uint32_t index = 0;  ///< index within the node
  LinkId link = kNone;      ///< kNone when nothing is plugged in
  PortId peer = kNone;      ///< the port at the other end
};

/// A full-duplex link (cable) between two ports.
struct Link {
  PortId a = kNone;
  PortId b = kNone;
  std::uint16_t port_type = 0;  ///< index into Topology::port_types (both ends run at that rate)
  CableKind cable = CableKind::kDac;
  Length length;
  SimTime latency;              ///< one way: propagation + PHY/FEC + DSP modules
  double ber = 0.0;             ///< pre-FEC bit error rate
  std::uint8_t link_class = 0;  ///< index into Topology::link_classes ("leaf_spine", "global")
};

/// How every link of one class is built (a generator's input for, e.g., all leaf-spine links).
struct LinkSpec {
  std::uint16_t port_type = 0;  ///< index into Topology::port_types
  CableKind cable = CableKind::kDac;
  Length length;
  double ber = 0.0;             ///< pre-FEC bit error rate
  std::uint8_t link_class = 0;  ///< index into Topology::link_classes
};

/// Physical-layer constants used to turn a cable into a latency.
struct PhyParams {
  SimTime per_metre = SimTime::ps(4900);      ///< fibre n = 1.468 (DOMAIN.md section 3)
  SimTime dac_per_metre = SimTime::ps(4300);  ///< twinax copper, velocity factor ~0.78
  SimTime phy_latency = SimTime::ns(100);     ///< SerDes + FEC per hop (DOMAIN.md section 1)
  SimTime dsp_latency = SimTime::ns(125);     ///< one optical DSP module (100-150 ns, seed 004)
};

/// One-way latency of a cable of this kind and length.
SimTime cable_latency(const PhyParams& phy, CableKind cable, Length length);

/// Human name of a cable kind ("dac", "aoc", "optics").
const char* to_string(CableKind c);

/// What a generator's clusters are, for the models that depend on their shape (routing,
/// deadlock-free lanes, rail folding) instead of the generator's name: a new generator of the
/// same shape declares the same traits (Generator::traits) and gets the same behaviour.
struct TopologyTraits {
  /// Groups of switches joined by global links (a dragonfly's): minimal routes take one global
  /// hop (routing), PFC runs two virtual lanes so that a detour cannot deadlock, and valiant
  /// routing is possible.
  bool global_links = false;
  /// Rail planes: NIC k of every server on plane k, the planes disjoint (rail-optimized), so the
  /// whole step may fold its rails (step.fold rails).
  bool rail_planes = false;
};

/// The whole cluster. Built by a generator (see generator.hpp and topology_spec.hpp).
struct Topology {
  std::string name;
  std::string generator;  ///< what built it ("fat_tree", "rail_optimized", "dragonfly")
  TopologyTraits traits;  ///< what it is (the generator's traits())
  std::vector<Node> nodes;
  std::vector<Port> ports;
  std::vector<Link> links;
  std::vector<phy::PortSpec> port_types;
  PhyParams phy;
  std::vector<std::string> link_classes;  ///< names of Link::link_class values
  std::vector<std::string> tier_names;    ///< names of Node::tier values ("server", "leaf", ...)
  /// Servers joined into each server node, one NVLink domain (topology.nvlink_domain; 18 for
  /// NVL72's compute trays): a node's GPUs share NVLink, its NICs are its servers' NICs. 1:
  /// the NVLink domain is the server.
  std::uint32_t servers_per_domain = 1;

  /// Adds a node with `port_count` unconnected ports; returns its id.
  NodeId add_node(NodeKind kind, std::uint8_t tier, std::uint32_t port_count,
                  std::uint32_t group = 0, std::uint16_t plane = 0, std::uint32_t gpus = 0);
  /// Cables port `pa` of node a to port `pb` of node b; latency from the cable.
  LinkId connect(NodeId a, std::uint32_t pa, NodeId b, std::uint32_t pb, std::uint16_t port_type,
                 CableKind cable, Length length, double ber = 0.0);
  /// Cables port `pa` of node a to port `pb` of node b as a link of class `spec`.
  LinkId connect(NodeId a, std::uint32_t pa, NodeId b, std::uint32_t pb, const LinkSpec& spec);

  [[nodiscard]] std::span<const Port> ports_of(NodeId n) const {
    return {ports.data() + nodes[n].first_port, nodes[n].port_count};
  }
  [[nodiscard]] PortId port_id(NodeId n, std::uint32_t index) const {
    return nodes[n].first_port + index;
  }
  [[nodiscard]] bool is_server(NodeId n) const { return nodes[n].kind == NodeKind::kServer; }
  [[nodiscard]] DataRate link_rate(LinkId l) const {
    return port_types[links[l].port_type].data_rate();
  }
  [[nodiscard]] std::size_t server_count() const;
  [[nodiscard]] std::size_t switch_count() const;
  [[nodiscard]] std::size_t gpu_count() const;
  /// Server ports that are cabled (the NICs in use).
  [[nodiscard]] std::size_t nic_count() const;
  /// Name of a tier for reports: tier_names[tier], or "tier N" when the generator gave none.
  [[nodiscard]] std::string tier_name(std::uint8_t tier) const;
  /// Name of a link class for reports: link_classes[c], or "class N".
  [[nodiscard]] std::string link_class_name(std::uint8_t c) const;

  /// The LP graph: one LP per node (same ids), one channel per link with its latency and its
  /// rate (in Gb/s) as traffic weight.
  [[nodiscard]] pdes::LpGraph lp_graph() const;
};

/// Finds the first inconsistency in the wiring (a port whose peer's peer is not itself, a link
/// whose ends disagree with its ports, a server cabled to a server); empty when consistent.
std::string find_wiring_error(const Topology& topo);

}  // namespace stepsim::topology
