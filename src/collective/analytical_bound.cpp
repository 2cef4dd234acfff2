// The analytical (alpha-beta, no contention) cost of a collective (see analytical_bound in
// collective_app.hpp). The chain of hops comes from the algorithm's declaration
// (CollectiveAlgorithm::bound_chain); "auto", and the algorithms that move less than their
// chain says (NVLS, SHARP), take the smallest of the tuner's candidates.
#include <cmath>
#include <limits>

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
  return ab;
}

}  // namespace stepsim::collective
