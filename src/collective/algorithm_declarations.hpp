#pragma once
// The registered collective algorithms (one file each: src/collective/<name>_algorithm.cpp, which
// registers it with AlgorithmRegistration) and the cost terms several of them share.

#include <cstddef>
#include <vector>

#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/core/registry.hpp"

namespace stepsim::collective {

/// The algorithms' registry: one shared instance each, listed by rank (the order of
/// collective_algorithms(), `stepsim list algorithms` and the tuner's candidates on ties).
using AlgorithmRegistry = Registry<CollectiveAlgorithm>;

/// Registers an algorithm at static-initialisation time under its own name() and description(),
/// one line in its file: `const AlgorithmRegistration kMineRegistration{[] { return
/// std::make_unique<Mine>(); }, RANK};`. RANK places it among the others (ring 10, chain 20,
/// pairwise 30, tree 40, nvls 50, nvls_tree 60, sharp 70, nvls_sharp 80, deepep 90, deepep_ll
/// 100): the tuner takes the first of equal costs, so a rank is part of what `--algo auto`
/// chooses.
using AlgorithmRegistration = NamedRegistration<AlgorithmRegistry>;

/// NCCL's p2p over the network (transport/net.cc, device.h): a source GPU's channel has
/// NCCL_SHARED_STEPS chunk slots shared by the ops of one batch, at most
/// NCCL_MAX_DEV_WORK_P2P_PER_BATCH peers (one schedule group, init.cc ncclP2pSchedule).
inline constexpr int kNcclSharedSteps = 16;
inline constexpr int kNcclP2pPerBatch = 8;
/// Pieces one network peer has in flight: coll.p2p.channels_per_peer x min(coll.slots,
/// kNcclSharedSteps / nsubs), nsubs the peers in its batch (1..8; sendProxyProgress' maxDepth):
/// 2 x 8 for a lone peer (SendRecv), 2 x 2 for the 8 peers of a remote server (AllToAll).
std::int64_t p2p_window(const CollectiveParams& p, int peers_in_batch);

/// NCCL's schedule groups over a communicator of n GPUs, G per server: the network peers of a
/// source GPU fall in groups of gcd(G, kNcclP2pPerBatch) consecutive local indices of one
/// destination server (init.cc ncclP2pSchedule). Counts each group's peers for p2p_window.
class P2pScheduleGroups {
 public:
  P2pScheduleGroups(int n, int G);
  void add(int src, int dst) { ++peers_[index(src, dst)]; }
  /// The peers counted in (src, dst)'s group.
  [[nodiscard]] int peers(int src, int dst) const { return peers_[index(src, dst)]; }

 private:
  [[nodiscard]] std::size_t index(int src, int dst) const {
    return (static_cast<std::size_t>(src) * servers_ + static_cast<std::size_t>(dst / G_)) *
               per_server_ +
           static_cast<std::size_t>(dst % G_ / group_);
  }
  int G_;
  int group_;
  std::size_t servers_;
  std::size_t per_server_;
  std::vector<int> peers_;
};

/// NVLS needs more than two GPUs in the NVLink domain (NCCL transport/nvls.cc: no NVLS at
/// gpuCount <= 2); forcing it below is a user error.
inline constexpr int kNvlsMinGpus = 3;
/// The tuner considers NVLS from four GPUs per server: each GPU's NVLink carries (G+1)/G S under
/// NVLS against 2(G-1)/G S in a ring, as much or more at G <= 3, and NVLS runs slower per byte.
inline constexpr int kNvlsTunedMinGpus = 4;

/// NVLS across servers runs at the one-server NVLS bus bandwidth, not above it. NCCL's tuning.cc
/// prices NVLS on any number of nodes from the one NVLink SHARP rate per channel (busBw = nChannels
/// x min(2 x bwIntra x nvlsEfficiency x (nCh-1)/nCh, bwInter); the rank count enters only the
/// busbw-to-algbw ratio n / 2(n-1)), so its time for the NVLink part is 2(n-1)/n S / busbw_1 with
/// busbw_1 the one-server NVLS busbw 2(G-1)/G x rate x G/(G+1). NVLink still carries (G+1)/G S per
/// GPU, so the NVLS pieces move at rate x (G-1)/G x n/(n-1): 1 at n = G, 7/8 for many servers of
/// 8. (Without it, busbw rose with the server count to 2G/(G+1) x rate, 14% above one server's.)
inline double nvls_across_servers_scale(int gpus_per_server, int gpus) {
  if (gpus <= gpus_per_server || gpus_per_server <= 1) return 1.0;
  const double g = gpus_per_server;
  const double n = gpus;
  return (g - 1.0) / g * n / (n - 1.0);
}

/// The ring's bandwidth per GPU: min(GPUs per server x NIC, NVLink) between servers, NVLink
/// inside one.
double ring_bandwidth(const CollectiveShape& s, const TunerRates& r);
/// Steps a piece crosses one after another in a ring: 2(n-1) for AllReduce, n-1 otherwise.
double ring_steps(const CollectiveShape& s);
/// The ring's tuner terms: ring_steps, of which `servers` of every n cross the network, at the
/// ring's bandwidth.
TunerCost ring_tuner_cost(const CollectiveShape& s, const TunerRates& r);
/// The ring's chain: ring_steps, `servers` of every n over the network.
BoundChain ring_bound_chain(const CollectiveShape& s);

/// What DeepEP's two algorithms (normal and low-latency kernels) declare alike for their
/// `kinds`: tuned (the only candidate for them under coll.algorithm auto) and the Simple
/// protocol only (DeepEP's own kernels, not NCCL's protocols).
AlgorithmSupport deepep_support(std::vector<Kind> kinds);
/// Their tuner terms: the tuner has no routing, so S over the GPU's NIC between servers or
/// NVLink inside one, in one step (the analytical bound prices the routed bytes, ep_routing.hpp).
TunerCost deepep_tuner_cost(const CollectiveShape& s, const TunerRates& r);
/// What a DeepEP piece of `payload` bytes occupies on the NIC: its wire bytes over
/// coll.ep.rdma_efficiency.
std::int64_t deepep_rdma_bytes(const CollectiveCore& core, std::int64_t payload);

}  // namespace stepsim::collective
