// Balanced expert routing (see ep_routing.hpp). A token's top_k experts are distinct, so the
// chance that none falls in a set of `own` experts of a pool is hypergeometric.
#include "src/collective/ep_routing.hpp"

#include <algorithm>

namespace stepsim::collective {

namespace {

// P(none of k distinct picks from `pool` experts lands in a given `own` of them).
double none_of(double pool, double own, int k) {
  double q = 1;
  for (int i = 0; i < k; ++i) {
    const double left = pool - own - i;
    if (left <= 0) return 0;
    q *= left / (pool - i);
  }
  return q;
}

}  // namespace

EpRoute ep_route(int gpus, int gpus_per_server, const CollectiveParams& p) {
  EpRoute r;
  r.gpus_per_server = std::clamp(gpus_per_server, 1, std::max(gpus, 1));
  r.servers = (gpus + r.gpus_per_server - 1) / r.gpus_per_server;
  const double experts = p.ep_experts > 0 ? p.ep_experts : gpus;
  const int reach = p.ep_max_nodes > 0 ? std::min(p.ep_max_nodes, r.servers) : r.servers;
  const double chosen = static_cast<double>(reach) / r.servers;  // a given server is a candidate
  const double pool = experts * reach / r.servers;
  const int k = std::max(p.ep_top_k, 1);
  r.p_server = chosen * (1 - none_of(pool, experts / r.servers, k));
  r.p_gpu = chosen * (1 - none_of(pool, experts / gpus, k));
  return r;
}

EpLoads ep_loads(Kind kind, std::int64_t bytes, int gpus, int gpus_per_server,
                 const CollectiveParams& p) {
  const EpRoute r = ep_route(gpus, gpus_per_server, p);
  const double S = static_cast<double>(bytes);
  const double N = r.servers;
  const double G = r.gpus_per_server;
  EpLoads l;
  if (kind == Kind::kEpDispatchLl || kind == Kind::kEpCombineLl) {
    // top_k / gpus of S to every GPU.
    // Off-rail peers through the server's GPU on their rail: (G - 1) / G of them cross NVLink.
    const double per_peer = S * std::max(p.ep_top_k, 1) / gpus;
    l.nic = per_peer * (gpus - G);
    l.nvlink = per_peer * (G - 1) + l.nic * (G - 1) / G;
    return l;
  }
  l.nic = S * (N - 1) * r.p_server;
  // As a forwarder: the tokens of the N GPUs of its local index (its own included) to the
  // G - 1 other GPUs of its server.
  l.nvlink = N * S * (G - 1) * r.p_gpu;
  return l;
}

}  // namespace stepsim::collective
