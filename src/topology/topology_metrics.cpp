#include "stepsim/topology/topology_metrics.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace stepsim::topology {
namespace {

std::uint8_t max_tier(const Topology& topo) {
  std::uint8_t t = 0;
  for (const Node& n : topo.nodes) t = std::max(t, n.tier);
  return t;
}

}  // namespace

std::size_t plane_count(const Topology& topo) {
  std::size_t planes = 0;
  for (const Node& n : topo.nodes) {
    if (n.kind == NodeKind::kSwitch) planes = std::max<std::size_t>(planes, n.plane + 1u);
  }
  return planes;
}

std::vector<TierLoad> tier_loads(const Topology& topo) {
  std::vector<TierLoad> by_tier(max_tier(topo) + 1u);
  for (std::size_t t = 0; t < by_tier.size(); ++t) by_tier[t].tier = static_cast<std::uint8_t>(t);
  std::vector<std::int64_t> down(by_tier.size()), up(by_tier.size()), local(by_tier.size()),
      global(by_tier.size());
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    const Node& n = topo.nodes[v];
    if (n.kind != NodeKind::kSwitch) continue;
    ++by_tier[n.tier].switches;
    for (const Port& p : topo.ports_of(v)) {
      if (p.link == kNone) continue;
      const Node& peer = topo.nodes[topo.ports[p.peer].node];
      const std::int64_t bps = topo.link_rate(p.link).bits_per_second();
      if (peer.tier < n.tier) {
        down[n.tier] += bps;
      } else if (peer.tier > n.tier) {
        up[n.tier] += bps;
      } else if (peer.group == n.group) {
        local[n.tier] += bps;
      } else {
        global[n.tier] += bps;
      }
    }
  }
  std::vector<TierLoad> out;
  for (std::size_t t = 0; t < by_tier.size(); ++t) {
    if (by_tier[t].switches == 0) continue;
    by_tier[t].down = DataRate::bps(down[t]);
    by_tier[t].up = DataRate::bps(up[t]);
    by_tier[t].local = DataRate::bps(local[t]);
    by_tier[t].global = DataRate::bps(global[t]);
    out.push_back(by_tier[t]);
  }
  return out;
}

std::vector<LinkClassStats> link_class_stats(const Topology& topo) {
  std::map<std::uint8_t, LinkClassStats> by_class;
  std::map<std::uint8_t, std::int64_t> bps;
  for (LinkId id = 0; id < topo.links.size(); ++id) {
    const Link& l = topo.links[id];
    auto [it, fresh] = by_class.try_emplace(l.link_class);
    LinkClassStats& s = it->second;
    if (fresh) {
      s.link_class = l.link_class;
      s.min_length = s.max_length = l.length;
      s.min_latency = s.max_latency = l.latency;
    }
    ++s.links;
    if (std::find(s.cables.begin(), s.cables.end(), l.cable) == s.cables.end()) {
      s.cables.push_back(l.cable);
    }
    const std::string& port = topo.port_types[l.port_type].name;
    if (std::find(s.ports.begin(), s.ports.end(), port) == s.ports.end()) s.ports.push_back(port);
    s.min_length = std::min(s.min_length, l.length);
    s.max_length = std::max(s.max_length, l.length);
    s.min_latency = std::min(s.min_latency, l.latency);
    s.max_latency = std::max(s.max_latency, l.latency);
    bps[l.link_class] += topo.link_rate(id).bits_per_second();
  }
  std::vector<LinkClassStats> out;
  for (auto& [c, s] : by_class) {
    s.capacity = DataRate::bps(bps[c]);
    out.push_back(s);
  }
  return out;
}

Bisection bisection(const Topology& topo) {
  Bisection b;
  const std::size_t n = topo.nodes.size();
  std::size_t servers = topo.server_count();
  b.first_half = servers / 2;
  if (servers < 2) return b;

  // Which halves have servers below each node: bit 1 first half, bit 2 second half.
  std::vector<std::uint8_t> below(n, 0);
  std::size_t seen = 0;
  std::vector<NodeId> switches;
  for (NodeId v = 0; v < n; ++v) {
    if (topo.is_server(v)) {
      below[v] = seen++ < b.first_half ? 1 : 2;
    } else {
      switches.push_back(v);
    }
  }
  std::stable_sort(switches.begin(), switches.end(),
                   [&](NodeId x, NodeId y) { return topo.nodes[x].tier < topo.nodes[y].tier; });
  for (const NodeId v : switches) {
    for (const Port& p : topo.ports_of(v)) {
      if (p.link == kNone) continue;
      const NodeId w = topo.ports[p.peer].node;
      if (topo.nodes[w].tier < topo.nodes[v].tier) below[v] |= below[w];
    }
  }

  const std::size_t tiers = max_tier(topo) + 1u;
  const std::size_t planes = std::max<std::size_t>(1, plane_count(topo));
  const auto plane_of = [&](const Link& l) {
    const NodeId x = topo.ports[l.a].node;
    return topo.is_server(x) ? topo.nodes[topo.ports[l.b].node].plane : topo.nodes[x].plane;
  };
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  std::int64_t injection = std::numeric_limits<std::int64_t>::max();
  for (const std::uint8_t half : {std::uint8_t{1}, std::uint8_t{2}}) {
    // cut[plane][t]: capacity leaving {this half's servers} + {its own switches of tier <= t}.
    std::vector<std::int64_t> cut(planes * tiers, 0);
    const auto inside = [&](NodeId v, std::size_t t) {
      return below[v] == half && topo.nodes[v].tier <= t;
    };
    for (LinkId id = 0; id < topo.links.size(); ++id) {
      const Link& l = topo.links[id];
      const NodeId x = topo.ports[l.a].node;
      const NodeId y = topo.ports[l.b].node;
      const std::int64_t bps = topo.link_rate(id).bits_per_second();
      const std::size_t plane = plane_of(l);
      for (std::size_t t = 0; t < tiers; ++t) {
        if (inside(x, t) != inside(y, t)) cut[plane * tiers + t] += bps;
      }
    }
    std::int64_t total = 0;
    std::int64_t servers_only = 0;
    for (std::size_t p = 0; p < planes; ++p) {
      total += *std::min_element(cut.begin() + static_cast<std::ptrdiff_t>(p * tiers),
                                 cut.begin() + static_cast<std::ptrdiff_t>((p + 1) * tiers));
      servers_only += cut[p * tiers];
    }
    best = std::min(best, total);
    injection = std::min(injection, servers_only);
  }
  b.capacity = DataRate::bps(best);
  b.injection = DataRate::bps(injection);
  return b;
}

Diameter server_diameter(const Topology& topo) {
  Diameter d;
  const std::size_t n = topo.nodes.size();
  // Servers with the same switches are alike: group them by their sorted switch list.
  std::map<std::vector<NodeId>, std::vector<NodeId>> alike;
  std::vector<NodeId> servers;
  for (NodeId v = 0; v < n; ++v) {
    if (!topo.is_server(v)) continue;
    servers.push_back(v);
    std::vector<NodeId> sw;
    for (const Port& p : topo.ports_of(v)) {
      if (p.link != kNone) sw.push_back(topo.ports[p.peer].node);
    }
    std::sort(sw.begin(), sw.end());
    sw.erase(std::unique(sw.begin(), sw.end()), sw.end());
    alike[sw].push_back(v);
  }
  if (servers.size() < 2) return d;
  // One breadth-first search per group over every port: refuse what would take minutes.
  if (static_cast<double>(alike.size()) * static_cast<double>(topo.ports.size()) >
      kDiameterWorkLimit) {
    d.computed = false;
    return d;
  }
  constexpr std::uint32_t kInf = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> dist(n);
  std::vector<NodeId> queue;
  queue.reserve(n);
  for (const auto& [sw, members] : alike) {
    if (sw.empty()) {
      d.connected = false;
      continue;
    }
    if (members.size() >= 2) d.links = std::max<std::uint32_t>(d.links, 2);
    std::fill(dist.begin(), dist.end(), kInf);
    queue.clear();
    for (const NodeId s : sw) {
      dist[s] = 1;
      queue.push_back(s);
    }
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const NodeId v = queue[head];
      for (const Port& p : topo.ports_of(v)) {
        if (p.link == kNone) continue;
        const NodeId w = topo.ports[p.peer].node;
        if (topo.is_server(w) || dist[w] != kInf) continue;
        dist[w] = dist[v] + 1;
        queue.push_back(w);
      }
    }
    // Every other group of alike servers: one hop past its nearest switch.
    for (const auto& [other_sw, other] : alike) {
      if (other_sw.empty() || (&other == &members)) continue;
      std::uint32_t best = kInf;
      for (const NodeId x : other_sw) {
        if (dist[x] != kInf) best = std::min(best, dist[x] + 1);
      }
      if (best == kInf) {
        d.connected = false;
      } else {
        d.links = std::max(d.links, best);
      }
    }
  }
  return d;
}

}  // namespace stepsim::topology
