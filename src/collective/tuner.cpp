// The tuner (choose(), in the spirit of NCCL's src/graph/tuning.cc): every candidate algorithm
// declares its cost terms (CollectiveAlgorithm::tuner_cost); the tuner prices each with every
// protocol it runs and keeps the fastest. Simplified: one transport latency per network step
// (2.5 us NIC to NIC through a leaf), no per-channel or per-rank adjustments.
#include <algorithm>
#include <vector>

#include "stepsim/collective/collective_algorithm.hpp"

namespace stepsim::collective {

namespace {

// What choose() prices: the named algorithm for the kind (the ring's family when it does not run
// the kind), or, for "auto", the registry's tuner candidates.
std::vector<const CollectiveAlgorithm*> priced(const CollectiveParams& p,
                                               const CollectiveShape& s) {
  if (p.algorithm == "auto") return tuner_candidates(s, p);
  const CollectiveAlgorithm* a = find_algorithm(p.algorithm, s.kind);
  return {a != nullptr ? a : find_algorithm("ring", s.kind)};
}

std::vector<std::string> protocols_of(const CollectiveParams& p, const CollectiveAlgorithm& a) {
  if (p.protocol != "auto") {
    // A forced protocol (NCCL_PROTO): the algorithms that do not run it are not candidates.
    const auto forced = parse_protocol(p.protocol);
    if (p.algorithm == "auto" && forced && !a.support().has_protocol(*forced)) return {};
    return {p.protocol};
  }
  std::vector<std::string> out;
  const auto& ex = p.tuner_excluded_protocols;
  for (Protocol q : a.support().protocols) {
    if (std::find(ex.begin(), ex.end(), protocol_name(q)) == ex.end()) {
      out.push_back(protocol_name(q));
    }
  }
  return out;
}

}  // namespace

Choice choose(Kind kind, std::int64_t bytes, int gpus, std::uint32_t gpus_per_server,
              const CollectiveParams& p, DataRate nic_rate) {
  const CollectiveShape s = CollectiveShape::of(kind, bytes, gpus, gpus_per_server);
  const TunerRates rates{static_cast<double>(p.nvlink_payload().bits_per_second()) / 8.0,
                         static_cast<double>(nic_rate.bits_per_second()) / 8.0,
                         p.nvls_efficiency,
                         p.p2p_proxy_busy.seconds(),
                         static_cast<double>(p.p2p_net_chunk),
                         p.nvls_overhead.seconds(),
                         p.nvls_tree_net_overhead.seconds()};
  // Transport latency of one step (what the simulator models under the overheads).
  const double net_latency = 2.5e-6;
  const double nvlink_latency = p.nvlink_latency.seconds();
  Choice best;
  best.predicted_s = -1;
  for (const CollectiveAlgorithm* a : priced(p, s)) {
    const TunerCost c = a->tuner_cost(s, rates);
    for (const std::string& pr : protocols_of(p, *a)) {
      CollectiveParams q = p;
      q.protocol = pr;
      const double t =
          q.base_latency().seconds() + c.latency +
          c.steps_intra * (nvlink_latency + q.hop_overhead(true).seconds()) +
          c.steps_inter * (net_latency + q.hop_overhead(false).seconds()) +
          busbw_factor(kind, gpus) * static_cast<double>(bytes) / (c.bandwidth / q.wire_factor());
      if (best.predicted_s < 0 || t < best.predicted_s) best = Choice{a->selected_by(), pr, t};
    }
  }
  return best;
}

}  // namespace stepsim::collective
