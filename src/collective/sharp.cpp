// SHARP aggregation trees and the switch-side agent (see sharp.hpp).
#include "stepsim/collective/sharp.hpp"

#include <algorithm>
#include <deque>
#include <string>

#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::collective {

using topology::kNone;
using topology::NodeId;
using topology::PortId;

namespace {

// Hop distances from `from` to every switch, through switches only (kNone: unreachable).
std::vector<std::uint32_t> switch_distances(const topology::Topology& topo, NodeId from) {
  std::vector<std::uint32_t> d(topo.nodes.size(), kNone);
  std::deque<NodeId> todo{from};
  d[from] = 0;
  while (!todo.empty()) {
    const NodeId u = todo.front();
    todo.pop_front();
    for (const topology::Port& p : topo.ports_of(u)) {
      if (p.link == kNone) continue;
      const NodeId w = topo.ports[p.peer].node;
      if (topo.is_server(w) || d[w] != kNone) continue;
      d[w] = d[u] + 1;
      todo.push_back(w);
    }
  }
  return d;
}

std::string switch_name(const topology::Topology& topo, NodeId v) {
  return topo.tier_name(topo.nodes[v].tier) + " switch " + std::to_string(v);
}

// The root of rail `l`'s tree: the switch whose farthest leaf is nearest; equal choices are
// spread over the rails (kNone: no switch reaches every leaf).
NodeId pick_root(const topology::Topology& topo, const std::vector<NodeId>& leaves,
                 std::uint32_t l) {
  std::vector<std::uint32_t> worst(topo.nodes.size(), 0);
  for (NodeId leaf : leaves) {
    const std::vector<std::uint32_t> d = switch_distances(topo, leaf);
    for (NodeId v = 0; v < topo.nodes.size(); ++v) worst[v] = std::max(worst[v], d[v]);
  }
  std::uint32_t best = kNone;
  std::vector<NodeId> roots;
  for (NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (topo.is_server(v) || worst[v] == kNone) continue;
    if (worst[v] < best) {
      best = worst[v];
      roots.clear();
    }
    if (worst[v] == best) roots.push_back(v);
  }
  return roots.empty() ? kNone : roots[l % roots.size()];
}

// The switches of tree `t` (rail `l`): each leaf climbs toward the root along shortest paths
// (rail l takes the l-th way up where there are several); paths merge where they meet.
void grow_tree(const topology::Topology& topo, SharpTree& t, NodeId root,
               const std::vector<NodeId>& leaves, std::uint32_t l) {
  const std::vector<std::uint32_t> dist = switch_distances(topo, root);
  std::vector<std::uint32_t> index_of(topo.nodes.size(), kNone);
  auto node_of = [&](NodeId v) -> SharpTreeNode& {
    if (index_of[v] == kNone) {
      index_of[v] = static_cast<std::uint32_t>(t.nodes.size());
      t.nodes.push_back(SharpTreeNode{v, kNone, {}});
    }
    return t.nodes[index_of[v]];
  };
  node_of(root);
  for (PortId nic : t.members) {
    const PortId down = topo.ports[nic].peer;
    node_of(topo.ports[down].node).child_ports.push_back(topo.ports[down].index);
  }
  for (NodeId leaf : leaves) {
    NodeId u = leaf;
    while (u != root && node_of(u).parent_port == kNone) {
      std::vector<std::uint32_t> up;
      for (const topology::Port& p : topo.ports_of(u)) {
        if (p.link == kNone) continue;
        const NodeId w = topo.ports[p.peer].node;
        if (!topo.is_server(w) && dist[w] + 1 == dist[u]) up.push_back(p.index);
      }
      STEPSIM_CHECK(!up.empty(), "sharp: no way up from a switch on a shortest path");
      const std::uint32_t pi = up[l % up.size()];
      node_of(u).parent_port = pi;
      const PortId peer = topo.ports[topo.port_id(u, pi)].peer;
      const NodeId w = topo.ports[peer].node;
      node_of(w).child_ports.push_back(topo.ports[peer].index);
      u = w;
    }
  }
}

}  // namespace

Result<std::vector<SharpTree>> plan_sharp(const topology::Topology& topo, const Communicator& comm,
                                          const CollectiveParams& params) {
  const std::uint32_t G = comm.gpus_per_server;
  const auto n = static_cast<std::uint32_t>(comm.size());
  const CollectiveShape shape = CollectiveShape::of(Kind::kAllReduce, 0, comm.size(), G);
  if (auto a = check_algorithm("sharp", shape, params); !a) return a.error();
  std::vector<SharpTree> trees(G);
  std::vector<std::uint32_t> trees_at(topo.nodes.size(), 0);
  for (std::uint32_t l = 0; l < G; ++l) {
    SharpTree& t = trees[l];
    std::vector<NodeId> leaves;
    for (std::uint32_t g = l; g < n; g += G) {
      const PortId nic = comm.gpus[g].nic;
      if (topo.ports[nic].link == kNone) {
        return Error{"coll.algorithm: sharp: the NIC of GPU " + std::to_string(g) +
                     " is not cabled"};
      }
      t.members.push_back(nic);
      leaves.push_back(topo.ports[topo.ports[nic].peer].node);
    }
    std::sort(leaves.begin(), leaves.end());
    leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
    const NodeId root = pick_root(topo, leaves, l);
    if (root == kNone) {
      return Error{"coll.algorithm: sharp: no switch reaches all NICs of rail " +
                   std::to_string(l)};
    }
    grow_tree(topo, t, root, leaves, l);
    for (const SharpTreeNode& x : t.nodes) {
      if (++trees_at[x.sw] > static_cast<std::uint32_t>(params.sharp_trees)) {
        return Error{"coll.sharp.trees: " + switch_name(topo, x.sw) + " would hold " +
                     std::to_string(trees_at[x.sw]) + " aggregation trees, more than " +
                     std::to_string(params.sharp_trees)};
      }
      if (x.child_ports.size() > 0xffff) {
        return Error{"coll.algorithm: sharp: more than 65535 children at one switch"};
      }
    }
  }
  return trees;
}

SharpAgent::SharpAgent(const topology::Topology& topo, std::vector<SharpTree> trees,
                       const CollectiveParams& params, std::uint32_t window_packets)
    : topo_(topo), trees_(std::move(trees)), p_(params), window_(window_packets) {
  STEPSIM_CHECK(window_ >= 1, "sharp: window of at least one packet");
}

void SharpAgent::setup(fabric::FabricModel& fabric, std::span<const pdes::LpId> local_lps) {
  fabric_ = &fabric;
  const std::size_t nn = topo_.nodes.size();
  entries_.assign(nn, {});
  alu_free_.assign(nn, SimTime::zero());
  alu_rate_.assign(nn, DataRate::bps(0));
  stats_.assign(nn, SharpSwitchStats{});
  std::vector<bool> local(nn, false);
  for (pdes::LpId v : local_lps) local[v] = true;
  for (std::uint32_t t = 0; t < trees_.size(); ++t) {
    for (const SharpTreeNode& x : trees_[t].nodes) {
      if (!local[x.sw]) continue;
      ++stats_[x.sw].trees;
      Entry e;
      e.tree = t;
      e.node = &x;
      e.seq.assign(window_, kNone);
      e.count.assign(window_, 0);
      std::int64_t bps = 0;
      for (std::uint32_t c : x.child_ports) {
        const DataRate r = topo_.link_rate(topo_.ports[topo_.port_id(x.sw, c)].link);
        bps = bps == 0 ? r.bits_per_second() : std::min(bps, r.bits_per_second());
      }
      e.down_rate = DataRate::bps(std::max<std::int64_t>(bps, 1));
      entries_[x.sw].push_back(std::move(e));
    }
  }
  for (pdes::LpId v : local_lps) {
    if (topo_.is_server(v)) continue;
    std::int64_t bps = p_.sharp_alu.bits_per_second();
    if (bps == 0) {
      for (const topology::Port& p : topo_.ports_of(v)) {
        if (p.link != kNone) bps += topo_.link_rate(p.link).bits_per_second();
      }
    }
    alu_rate_[v] = DataRate::bps(std::max<std::int64_t>(bps, 1));
  }
}

void SharpAgent::on_packet(pdes::LpContext& ctx, std::uint32_t in_port, const fabric::Packet& pkt) {
  const NodeId v = ctx.self();
  const auto h = pkt.transport.as<SharpHeader>();
  Entry* e = nullptr;
  for (Entry& x : entries_[v]) {
    if (x.tree == h.tree) e = &x;
  }
  STEPSIM_CHECK(e != nullptr, "sharp: a packet of tree " + std::to_string(h.tree) + " at " +
                                  switch_name(topo_, v) + ", which is not on it");
  const SharpTreeNode& node = *e->node;
  SharpSwitchStats& st = stats_[v];
  const auto payload = static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::int64_t{pkt.bytes} - fabric::kRoceHeaderBytes));
  const auto children = static_cast<std::uint64_t>(node.child_ports.size());
  // A packet the agent sends is new: no congestion marks or INT requests carried over.
  auto fresh = [&](std::uint32_t op) {
    fabric::Packet x;
    x.dst_nic = pkt.dst_nic;
    x.tuple_hash = pkt.tuple_hash;
    x.bytes = pkt.bytes;
    x.prio = pkt.prio;
    x.in_network = 1;
    x.via = pkt.via;
    x.telemetry = pkt.telemetry;
    x.transport = fabric::TransportHeader::of(SharpHeader{.tree = h.tree, .seq = h.seq, .op = op});
    return x;
  };
  auto multicast = [&](SimTime at) {
    const fabric::Packet down = fresh(kSharpDown);
    for (std::uint32_t c : node.child_ports) fabric_->emit_from_switch(ctx, c, c, down, at);
    st.down_out_bytes += payload * children;
  };
  if (h.op == kSharpDown) {
    st.down_in_bytes += payload;
    multicast(ctx.now());
    return;
  }
  if (h.op == kSharpGather) {
    // AllGather: nothing to reduce or wait for; the packet goes on up after the switch's
    // latency, and the root multicasts it down. Every member's shard comes down every link, so
    // the root paces its multicast at the child links' rate (SHARP's flow control): sent as
    // they come, the members' streams would overrun each child link m-fold, and a multicast
    // copy beyond what PFC's headroom holds is dropped.
    st.up_in_bytes += payload;
    SimTime at = ctx.now() + p_.sharp_latency;
    if (node.parent_port == kNone) {
      at = std::max(at, e->down_free);
      e->down_free =
          at + e->down_rate.serialization_time(Bytes(pkt.bytes + fabric::kWireOverheadBytes));
      multicast(at);
      return;
    }
    fabric::Packet up = fresh(kSharpGather);
    fabric_->emit_from_switch(ctx, node.parent_port, in_port, up, at);
    st.up_out_bytes += payload;
    return;
  }
  STEPSIM_CHECK(h.op == kSharpUp, "sharp: unknown in-network opcode");
  st.up_in_bytes += payload;
  // The reduction engine takes every contribution's bytes at its rate.
  SimTime& alu = alu_free_[v];
  alu = std::max(alu, ctx.now()) + alu_rate_[v].serialization_time(Bytes(payload));
  const std::uint32_t slot = h.seq % window_;
  if (e->seq[slot] != h.seq) {
    STEPSIM_CHECK(e->count[slot] == 0, "sharp: a tree sent more than its window");
    e->seq[slot] = h.seq;
  }
  if (++e->count[slot] < children) return;
  e->count[slot] = 0;
  e->seq[slot] = kNone;
  ++st.aggregations;
  const SimTime at = alu + p_.sharp_latency;
  if (node.parent_port == kNone) {
    multicast(at);
    return;
  }
  fabric_->emit_from_switch(ctx, node.parent_port, in_port, fresh(kSharpUp), at);
  st.up_out_bytes += payload;
}

std::uint64_t SharpAgent::digest(pdes::LpId node) const {
  return stat::digest(0, stats_[node]);
}

std::vector<SharpSwitchStats> SharpAgent::collect(pdes::Sync& sync) const {
  // Only a rank's own switches have counted (setup); the others are at their defaults.
  std::vector<SharpSwitchStats> out = stats_;
  out.resize(topo_.nodes.size());
  stat::allreduce(sync, out);
  return out;
}

Result<std::unique_ptr<SharpAgent>> make_sharp_agent(const topology::Topology& topo,
                                                     const Communicator& comm,
                                                     CollectiveParams& params,
                                                     const fabric::FabricParams& fabric) {
  params.sharp_payload = fabric.segment().count();
  if (params.sharp_window < params.sharp_payload) {
    return Error{"coll.sharp.window: at least one frame (" + std::to_string(params.sharp_payload) +
                 " bytes, the MTU or the cell)"};
  }
  auto trees = plan_sharp(topo, comm, params);
  if (!trees) return trees.error();
  return std::make_unique<SharpAgent>(
      topo, std::move(trees).value(), params,
      static_cast<std::uint32_t>(params.sharp_window / params.sharp_payload));
}

}  // namespace stepsim::collective
