#pragma once
// Expert-parallel routing, balanced over the experts (what DeepEP's tests and the published
// benchmarks force): the chance that a token of one GPU needs a given server or a given GPU,
// and the bytes this puts on each GPU's NIC and NVLink for the ep_* collective kinds. Shared by
// the packet runs (deepep_algorithm.cpp, deepep_ll_algorithm.cpp) and the analytical bound.

#include <cstdint>

#include "stepsim/collective/collective.hpp"

namespace stepsim::collective {

/// Where a token goes: node-limited routing picks min(coll.ep.max_nodes, servers) servers, then
/// top_k distinct experts among theirs (DeepSeek-V3's group-limited gating with random scores).
struct EpRoute {
  int servers = 1;
  int gpus_per_server = 1;
  double p_server = 1;  ///< a token needs a given server (>= 1 of its experts there)
  double p_gpu = 1;     ///< a token needs a given GPU
};
EpRoute ep_route(int gpus, int gpus_per_server, const CollectiveParams& p);

/// What one GPU moves in an ep_* collective of S = `bytes` (its tokens): bytes out of (and, by
/// symmetry, into) its NIC, and bytes over its NVLink egress (and ingress). Normal kernels: each
/// token once per other server it needs, to the GPU of the same local index, which forwards it
/// to the GPUs of its experts there; low-latency kernels: each (token, expert) pair straight to
/// the expert's GPU, NVLink inside the server, off-rail peers through the server's GPU on their
/// rail (an NVLink hop first). The GPU's own share stays in its memory.
struct EpLoads {
  double nic = 0;
  double nvlink = 0;
};
EpLoads ep_loads(Kind kind, std::int64_t bytes, int gpus, int gpus_per_server,
                 const CollectiveParams& p);

}  // namespace stepsim::collective
