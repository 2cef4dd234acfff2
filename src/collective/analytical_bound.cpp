// The analytical (alpha-beta, no contention) cost of a collective (see analytical_bound in
// collective_app.hpp). The chain of hops comes from the algorithm's declaration
// (CollectiveAlgorithm::bound_chain); "auto", and the algorithms that move less than their
// chain says (NVLS, SHARP), take the smallest of the tuner's candidates. Point to point
// (AllToAll, SendRecv) is bounded per NIC and per GPU: the busiest NIC's bytes (each way), the
// busiest GPU's NVLink bytes (its NVLink peers and its PXN hops) and the busiest proxy's messages
// (pairwise_algorithm.cpp), not by a server's aggregate.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/ep_routing.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/nic/rdma_host.hpp"

namespace stepsim::collective {

namespace {

std::vector<BoundChain> chains_of(const CollectiveParams& params, const CollectiveShape& s) {
  const CollectiveAlgorithm* a =
      params.algorithm == "auto" ? nullptr : find_algorithm(params.algorithm, s.kind);
  if (a != nullptr) {
    if (auto own = a->bound_chain(s)) return {*own};
  }
  std::vector<BoundChain> chains;
  for (const CollectiveAlgorithm* c : tuner_candidates(s)) {
    if (auto ch = c->bound_chain(s)) chains.push_back(*ch);
  }
  return chains;
}

// The seconds the busiest NIC or NVLink (first) and the busiest proxy (second) of a pairwise
// AllToAll or SendRecv need, routed as pairwise_algorithm.cpp routes (PXN through the source
// server's GPU on the destination's rail).
// A network flow of b bytes also needs ceil(b / chunk) / window round trips of its window
// (p2p_window: a piece is through its source's proxy, coll.p2p.proxy_overhead, and acknowledged
// a network round trip, `rtt`, before its slot takes the next), which the first term includes.
std::pair<double, double> p2p_seconds(const topology::Topology& topo, const Communicator& comm,
                                      Kind kind, std::int64_t bytes, const CollectiveParams& given,
                                      const fabric::FabricParams& fabric, double rtt) {
  const int n = comm.size();
  const auto G = static_cast<int>(
      std::min<std::uint32_t>(comm.gpus_per_server, static_cast<std::uint32_t>(n)));
  // The bytes on the wire at the protocol's factor; "auto" at Simple's (the smallest).
  CollectiveParams params = resolve_p2p(given, kind, n, (n + G - 1) / G,
                                        topo.link_rate(topo.ports[comm.gpus[0].nic].link));
  if (params.protocol == "auto") params.protocol = "simple";
  // Peers of a source in one schedule group: (source, destination server, local / group).
  P2pScheduleGroups groups(n, G);
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (dst / G != src / G && p2p_bytes(kind, bytes, n, src, dst) > 0) groups.add(src, dst);
    }
  }
  double window_s = 0;
  std::map<topology::PortId, std::pair<double, double>> nic;  // bytes out, in
  std::vector<double> nvlink(static_cast<std::size_t>(n), 0);
  std::vector<double> messages(static_cast<std::size_t>(n), 0);
  const auto chunks = [](std::int64_t b, std::int64_t c) {
    return static_cast<double>((b + c - 1) / c);
  };
  for (int src = 0; src < n; ++src) {
    const Gpu& a = comm.gpus[static_cast<std::size_t>(src)];
    const int first = src / G * G;
    for (int dst = 0; dst < n; ++dst) {
      const std::int64_t b = dst == src ? 0 : p2p_bytes(kind, bytes, n, src, dst);
      if (b <= 0) continue;
      const Gpu& d = comm.gpus[static_cast<std::size_t>(dst)];
      if (a.server == d.server) {
        nvlink[static_cast<std::size_t>(src)] += static_cast<double>(b);
        continue;
      }
      int via = first + dst % G;
      for (int k = first; k < std::min(first + G, n); ++k) {
        if (comm.gpus[static_cast<std::size_t>(k)].local == d.local) via = k;
      }
      const Gpu& x = comm.gpus[static_cast<std::size_t>(via)];
      if (x.local != a.local) nvlink[static_cast<std::size_t>(src)] += static_cast<double>(b);
      nic[x.nic].first += static_cast<double>(b);
      nic[d.nic].second += static_cast<double>(b);
      const double m = chunks(b, params.p2p_net_chunk);
      messages[static_cast<std::size_t>(x.local != a.local ? via : src)] += m;
      messages[static_cast<std::size_t>(dst)] += m;
      const auto window = static_cast<double>(p2p_window(params, groups.peers(src, dst)));
      window_s = std::max(
          window_s, std::floor((m - 1) / window) * (params.p2p_proxy_overhead.seconds() + rtt));
    }
  }
  const double wire = params.wire_factor();
  const double nvl = static_cast<double>(params.nvlink_payload().bits_per_second()) / 8;
  double t = 0;
  for (double v : nvlink) t = std::max(t, v * wire / nvl);
  for (const auto& [port, io] : nic) {
    const double rate =
        static_cast<double>(fabric::rdma_goodput(topo.link_rate(topo.ports[port].link), fabric.mtu)
                                .bits_per_second()) /
        8;
    t = std::max(t, std::max(io.first, io.second) * wire / rate);
  }
  double proxy = 0;
  for (double m : messages) proxy = std::max(proxy, m * params.p2p_proxy_busy.seconds());
  return {std::max(t, window_s), proxy};
}

// DeepEP's dispatch and combine (ep_routing.hpp): the busiest NIC's and NVLink's bytes, after
// one network hop (one-way, `net`) and one NVLink hop; the low-latency kernels add their own
// time (coll.ep.ll_overhead).
void ep_bound(const topology::Topology& topo, const Communicator& comm, Kind kind,
              std::int64_t bytes, const CollectiveParams& params,
              const fabric::FabricParams& fabric, double net, kernels::AlphaBeta& ab) {
  const int n = comm.size();
  const EpLoads l = ep_loads(kind, bytes, n, static_cast<int>(comm.gpus_per_server), params);
  const double nic =
      static_cast<double>(
          fabric::rdma_goodput(topo.link_rate(topo.ports[comm.gpus[0].nic].link), fabric.mtu)
              .bits_per_second()) /
      8 * params.ep_rdma_efficiency;
  const double nvl = static_cast<double>(params.nvlink_payload().bits_per_second()) / 8;
  const double t = std::max(l.nic / nic, l.nvlink / nvl);
  const bool ll = kind == Kind::kEpDispatchLl || kind == Kind::kEpCombineLl;
  ab.latency_s = net + params.nvlink_latency.seconds() + (ll ? params.ep_ll_overhead.seconds() : 0);
  ab.chain_s = ab.latency_s;
  ab.bytes = static_cast<double>(bytes);
  ab.rate = t > 0 ? ab.bytes / t : nvl;
}

}  // namespace

kernels::AlphaBeta analytical_bound(const topology::Topology& topo, const fabric::Routing& routing,
                                    const Communicator& comm, Kind kind, std::int64_t bytes,
                                    const CollectiveParams& params,
                                    const fabric::FabricParams& fabric) {
  const int n = comm.size();
  const CollectiveShape s = CollectiveShape::of(kind, bytes, n, comm.gpus_per_server);
  const auto G = static_cast<std::uint32_t>(s.gpus_per_server);
  const double nvlink = static_cast<double>(params.nvlink_payload().bits_per_second()) / 8;
  const double nvl = params.nvlink_latency.seconds();
  kernels::AlphaBeta ab;
  ab.bytes = busbw_factor(kind, n) * static_cast<double>(bytes);
  double net = 0;
  ab.rate = nvlink;
  if (s.servers > 1) {
    const topology::PortId a = comm.gpus[0].nic;
    net = nic::RdmaHost::base_rtt(topo, routing, fabric, a, comm.gpus[G].nic).seconds() / 2;
    const double nic =
        static_cast<double>(fabric::rdma_goodput(topo.link_rate(topo.ports[a].link), fabric.mtu)
                                .bits_per_second()) /
        8;
    ab.rate = std::min(G * nic, nvlink);
  }
  // The chain: the protocol's base latency, then the hops a piece of data crosses one after the
  // other, each at its transport's one-way latency plus the protocol's per-hop overhead (both
  // are in the packet model too). Pieces pipeline, so the chain bounds the time on its own; with
  // the bytes, only the base latency and the last piece's one hop add to the bottleneck's time.
  const std::vector<BoundChain> chains = chains_of(params, s);
  std::vector<std::string> protocols = {params.protocol};
  if (params.protocol == "auto") protocols = {"simple", "ll", "ll128"};
  ab.latency_s = std::numeric_limits<double>::infinity();
  ab.chain_s = std::numeric_limits<double>::infinity();
  for (const std::string& pr : protocols) {
    CollectiveParams q = params;
    q.protocol = pr;
    const double base = q.base_latency().seconds();
    const double hop_nvl = nvl + q.hop_overhead(true).seconds();
    for (const BoundChain& c : chains) {
      const double hop_net = net + (c.network_overhead ? q.hop_overhead(false).seconds() : 0.0);
      const double inter = c.network_hops;
      const double intra = c.nvlink_hops;
      ab.chain_s = std::min(ab.chain_s, base + inter * hop_net + intra * hop_nvl);
      ab.latency_s = std::min(ab.latency_s, base + (inter > 0 && intra == 0 ? hop_net : hop_nvl));
    }
  }
  if ((kind == Kind::kAllToAll || kind == Kind::kSendRecv || kind == Kind::kSend) && ab.bytes > 0) {
    // Per NIC and NVLink: the bytes after the base latency, then the last piece's hop. Per proxy:
    // its messages one after the other from the base latency on, the last one the receiver's,
    // with no hop after it. The larger of the two, as latency + bytes / rate.
    const auto [wire, proxy] = p2p_seconds(topo, comm, kind, bytes, params, fabric, 2 * net);
    double base = std::numeric_limits<double>::infinity();
    for (const std::string& pr : protocols) {
      CollectiveParams q = params;
      q.protocol = pr;
      base = std::min(base, q.base_latency().seconds());
    }
    if (base + proxy > ab.latency_s + wire) {
      ab.latency_s = base;
      ab.rate = ab.bytes / proxy;
    } else if (wire > 0) {
      ab.rate = ab.bytes / wire;
    }
  }
  if (is_ep_kind(kind)) ep_bound(topo, comm, kind, bytes, params, fabric, net, ab);
  return ab;
}

}  // namespace stepsim::collective
