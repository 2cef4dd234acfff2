// Shortest-path next hops by one BFS per edge switch over the switch-to-switch links.
#include "stepsim/fabric/routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "stepsim/core/fatal.hpp"

namespace stepsim::fabric {

using topology::kNone;
using topology::NodeId;
using topology::PortId;

Routing::Routing(const topology::Topology& topo) {
  const auto n = static_cast<NodeId>(topo.nodes.size());
  switch_index_.assign(n, kNone);
  edge_index_.assign(n, kNone);
  edge_of_nic_.assign(topo.ports.size(), kNone);
  nic_port_at_edge_.assign(topo.ports.size(), kNone);
  port_info_.resize(topo.ports.size());
  for (PortId p = 0; p < topo.ports.size(); ++p) {
    const topology::Port& port = topo.ports[p];
    if (port.link == kNone) continue;
    PortInfo& info = port_info_[p];
    info.peer_node = topo.ports[port.peer].node;
    info.peer_index = topo.ports[port.peer].index;
    info.link = port.link;
    info.latency = topo.links[port.link].latency;
    info.rate = topo.link_rate(port.link);
    info.peer_is_switch = !topo.is_server(info.peer_node);
  }
  std::vector<NodeId> switches;
  for (NodeId v = 0; v < n; ++v) {
    if (!topo.is_server(v)) {
      switch_index_[v] = static_cast<std::uint32_t>(switches.size());
      switches.push_back(v);
    }
  }
  for (NodeId v = 0; v < n; ++v) {
    if (!topo.is_server(v)) continue;
    for (const topology::Port& port : topo.ports_of(v)) {
      if (port.link == kNone) continue;
      const NodeId sw = topo.ports[port.peer].node;
      STEPSIM_CHECK(!topo.is_server(sw), "server cabled to a server: no switch to route through");
      const PortId nic = topo.port_id(v, port.index);
      edge_of_nic_[nic] = sw;
      nic_port_at_edge_[nic] = topo.ports[port.peer].index;
      if (edge_index_[sw] == kNone) {
        edge_index_[sw] = static_cast<std::uint32_t>(edge_nodes_.size());
        edge_nodes_.push_back(sw);
      }
    }
  }
  edges_ = edge_nodes_.size();
  edge_index_of_nic_.assign(topo.ports.size(), kNone);
  for (PortId p = 0; p < topo.ports.size(); ++p) {
    if (edge_of_nic_[p] != kNone) edge_index_of_nic_[p] = edge_index_[edge_of_nic_[p]];
  }
  table_.assign(switches.size() * edges_, Entry{0, 0, std::numeric_limits<std::uint16_t>::max()});
  build_table(topo, switches, edge_nodes_);
}

void Routing::build_table(const topology::Topology& topo, const std::vector<NodeId>& switches,
                          const std::vector<NodeId>& edges) {
  // Dragonflies route minimally as Kim et al. define it: local hops, one global hop, local hops.
  // Toward an edge switch of group G, a global link is usable only if one of its ends is in G; a
  // plain BFS would also take two or three global hops through third groups where they are as
  // short, and the virtual lanes that keep PFC deadlock-free (valiant_detour.hpp) count on one
  // global hop per minimal route.
  const bool dragonfly = topo.traits.global_links;
  auto usable = [&](NodeId v, NodeId w, std::uint32_t group) {
    const std::uint32_t gv = topo.nodes[v].group;
    const std::uint32_t gw = topo.nodes[w].group;
    return !dragonfly || gv == gw || gv == group || gw == group;
  };
  constexpr std::uint32_t kInf = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> dist(switches.size());
  std::vector<std::uint32_t> queue;
  queue.reserve(switches.size());
  std::vector<std::uint32_t> list;
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> distinct(switches.size());
  for (std::size_t e = 0; e < edges_; ++e) {
    std::fill(dist.begin(), dist.end(), kInf);
    queue.clear();
    const std::uint32_t root = switch_index_[edges[e]];
    const std::uint32_t group = topo.nodes[edges[e]].group;
    dist[root] = 0;
    queue.push_back(root);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const NodeId v = switches[queue[head]];
      for (const topology::Port& port : topo.ports_of(v)) {
        if (port.link == kNone) continue;
        const NodeId w = topo.ports[port.peer].node;
        if (topo.is_server(w) || !usable(v, w, group)) continue;
        const std::uint32_t wi = switch_index_[w];
        if (dist[wi] == kInf) {
          dist[wi] = dist[queue[head]] + 1;
          queue.push_back(wi);
        }
      }
    }
    for (std::size_t si = 0; si < switches.size(); ++si) {
      Entry& x = table_[si * edges_ + e];
      if (dist[si] == kInf) continue;
      x.distance = static_cast<std::uint16_t>(dist[si]);
      if (dist[si] == 0) continue;
      list.clear();
      for (const topology::Port& port : topo.ports_of(switches[si])) {
        if (port.link == kNone) continue;
        const NodeId w = topo.ports[port.peer].node;
        if (!topo.is_server(w) && usable(switches[si], w, group) &&
            dist[switch_index_[w]] + 1 == dist[si])
          list.push_back(port.index);
      }
      // Most destinations share a switch's few distinct lists (all of a leaf's remote edges use
      // its up ports): store each distinct list once per switch.
      x.count = static_cast<std::uint16_t>(list.size());
      x.offset = kNone;
      for (const auto& [offset, count] : distinct[si]) {
        if (count == list.size() && std::equal(list.begin(), list.end(), ports_.begin() + offset)) {
          x.offset = offset;
          break;
        }
      }
      if (x.offset == kNone) {
        x.offset = static_cast<std::uint32_t>(ports_.size());
        distinct[si].emplace_back(x.offset, static_cast<std::uint32_t>(list.size()));
        ports_.insert(ports_.end(), list.begin(), list.end());
      }
    }
  }
}

std::uint32_t Routing::distance(NodeId sw, PortId dst_nic) const {
  const std::uint32_t e = edge_index_[edge_of_nic_[dst_nic]];
  return table_[static_cast<std::size_t>(switch_index_[sw]) * edges_ + e].distance;
}

std::size_t Routing::memory_bytes() const {
  return table_.capacity() * sizeof(Entry) + ports_.capacity() * sizeof(std::uint32_t) +
         port_info_.capacity() * sizeof(PortInfo) +
         (switch_index_.capacity() + edge_index_.capacity() + edge_of_nic_.capacity() +
          nic_port_at_edge_.capacity() + edge_index_of_nic_.capacity() + edge_nodes_.capacity()) *
             sizeof(std::uint32_t);
}

pdes::LpGraph traffic_lp_graph(const topology::Topology& topo, const Routing& routing,
                               std::span<const std::pair<PortId, PortId>> pairs) {
  constexpr double kUnit = 1024;
  std::vector<double> link_load(topo.links.size(), 0.0);
  std::vector<double> node_load(topo.nodes.size(), 0.0);
  std::vector<std::pair<NodeId, double>> cur;
  std::vector<std::pair<NodeId, double>> next;
  auto spread = [&](PortId src, PortId dst) {
    if (topo.ports[src].link == kNone || topo.ports[dst].link == kNone) return;
    link_load[topo.ports[src].link] += kUnit;
    node_load[topo.ports[src].node] += kUnit;
    const NodeId last = routing.edge_of_nic(dst);
    cur.assign(1, {routing.edge_of_nic(src), kUnit});
    // Minimal routing: every hop is one switch closer, so this ends after the path's length.
    while (!cur.empty()) {
      next.clear();
      for (const auto& [sw, x] : cur) {
        node_load[sw] += x;
        if (sw == last) {
          link_load[topo.ports[dst].link] += x;
          node_load[topo.ports[dst].node] += x;
          continue;
        }
        const std::span<const std::uint32_t> cand = routing.candidates(sw, dst);
        const double share = x / static_cast<double>(std::max<std::size_t>(1, cand.size()));
        for (std::uint32_t c : cand) {
          const PortId gp = topo.nodes[sw].first_port + c;
          link_load[topo.ports[gp].link] += share;
          next.emplace_back(routing.port(gp).peer_node, share);
        }
      }
      // Paths that meet again travel on together.
      std::sort(next.begin(), next.end());
      cur.clear();
      for (const auto& [v, x] : next) {
        if (!cur.empty() && cur.back().first == v) {
          cur.back().second += x;
        } else {
          cur.emplace_back(v, x);
        }
      }
    }
  };
  for (const auto& [a, b] : pairs) {
    spread(a, b);
    spread(b, a);
  }
  pdes::LpGraph g(static_cast<pdes::LpId>(topo.nodes.size()), topo.name);
  for (topology::LinkId l = 0; l < topo.links.size(); ++l) {
    const topology::Link& link = topo.links[l];
    g.add_edge(topo.ports[link.a].node, topo.ports[link.b].node, link.latency,
               1 + std::llround(link_load[l] / kUnit));
  }
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    g.set_vertex_weight(v, 1 + std::llround(node_load[v] / kUnit));
    g.set_vertex_tier(v, topo.is_server(v) ? 0 : std::max<std::uint8_t>(1, topo.nodes[v].tier));
  }
  g.finalize();
  return g;
}

}  // namespace stepsim::fabric
