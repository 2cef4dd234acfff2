#pragma once
/// Runs one collective on the simulated GPUs: an RDMA application (nic::RdmaApp) that moves the
/// collective's pieces over NVLink inside a server (modelled in the server: a per-GPU link with
/// a bandwidth and a latency) and over RDMA WRITEs with immediate between servers. Which pieces
/// move when is the algorithm's (collective_algorithm.hpp: ring, chain, pairwise, tree, nvls,
/// sharp; one file each in src/collective/).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/collective/sharp.hpp"
#include "stepsim/core/log_histogram.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::collective {

struct CollectiveSpec {
  Kind kind = Kind::kAllReduce;
  std::int64_t bytes = 0;  ///< nccl-tests' S: the whole array (see busbw_factor)
  int root = 0;            ///< Broadcast and Reduce
  /// AllToAllv: bytes from rank i to rank j at [i x n + j] (the diagonal is ignored).
  std::vector<std::int64_t> matrix;
};

struct CollectiveResult {
  std::int64_t time_ps = 0;               ///< first post to the last GPU's completion
  std::vector<std::int64_t> gpu_done_ps;  ///< by communicator rank
  std::uint64_t nvlink_bytes = 0;         ///< wire bytes over NVLink (all GPUs)
  std::uint64_t network_bytes = 0;        ///< bytes posted to the NICs (all GPUs)
  /// Completion times (post to send completion, ps) of the network messages.
  LogHistogram message_fct;
  /// By endpoint (2 x connection + side, as connections() numbers them): the direction it sends.
  std::vector<ConnectionFlow> flows;
  [[nodiscard]] double algbw_gbs(std::int64_t bytes) const;  ///< GB/s (1e9), nccl-tests' algbw
  /// Every GPU finished.
  [[nodiscard]] bool complete() const {
    return std::all_of(gpu_done_ps.begin(), gpu_done_ps.end(),
                       [](std::int64_t t) { return t >= 0; });
  }
};

class AlgorithmRun;
class CollectiveCore;

/// The RDMA application of one collective: the registry's algorithm for the spec's kind and
/// coll.algorithm (its AlgorithmRun) over the machinery every algorithm shares (CollectiveCore:
/// NVLink timelines, connections, typed timers, records).
class CollectiveApp final : public nic::RdmaApp {
 public:
  /// `comm`, `params` must be valid and outlive the app; `params.algorithm` is not "auto".
  CollectiveApp(const Communicator& comm, CollectiveSpec spec, const CollectiveParams& params);
  ~CollectiveApp() override;
  CollectiveApp(const CollectiveApp&) = delete;
  CollectiveApp& operator=(const CollectiveApp&) = delete;

  /// The algorithm that runs.
  [[nodiscard]] const CollectiveAlgorithm& algorithm() const { return *algorithm_; }
  /// The RC connections the collective needs (their endpoints are what the app posts on).
  [[nodiscard]] const std::vector<nic::Connection>& connections() const;
  void on_start(nic::Verbs& verbs) override;
  void on_cq(nic::Verbs& verbs, std::uint32_t endpoint) override;
  /// One completion taken from `endpoint`'s CQ (on_cq polls and hands each here; an application
  /// that polls itself, like the whole-step run, calls it directly).
  void on_completion(nic::Verbs& verbs, std::uint32_t endpoint, const nic::Completion& c);
  /// Whether communicator rank `rank` finished (its server's callbacks set it).
  [[nodiscard]] bool gpu_done(std::uint32_t rank) const;
  /// GPU `rank`'s NVLink egress becomes `*free`, shared with other collectives (see
  /// CollectiveCore::share_nvlink).
  void share_nvlink(std::uint32_t rank, SimTime* free);
  void on_timer(nic::Verbs& verbs, const nic::AppTimer& timer) override;
  void on_in_network(nic::Verbs& verbs, topology::PortId nic, const fabric::Packet& pkt) override;
  /// Gathers every rank's records (collective over `sync`).
  [[nodiscard]] CollectiveResult result(pdes::Sync& sync) const;

 private:
  const CollectiveAlgorithm* algorithm_;
  std::unique_ptr<CollectiveCore> core_;
  std::unique_ptr<AlgorithmRun> run_;
};

/// A complete run of one collective; "auto" algorithm or protocol are chosen by choose() first.
struct CollectiveRun {
  CollectiveResult result;
  nic::RdmaRun rdma;
  Choice choice;  ///< the algorithm and protocol that ran (the tuner's, for "auto")
  std::vector<SharpSwitchStats> sharp;       ///< SHARP: every switch's aggregation, by node id
  std::vector<nic::Connection> connections;  ///< the RC connections it used (endpoint 2c, 2c+1)
};

/// Checks a collective's spec against its communicator and parameters (the errors are user
/// errors) and resolves "auto" with the tuner: the parameters it runs with, and in `choice` what
/// the tuner chose.
Result<CollectiveParams> prepare_collective(const topology::Topology& topo,
                                            const Communicator& comm, const CollectiveSpec& spec,
                                            const CollectiveParams& params,
                                            const fabric::FabricParams& fabric, Choice& choice);

/// Several collectives at once, each on its own communicator, over the same NICs and fabric:
/// what their traffic does to each other's. Each has its own NVLink timelines (contention on
/// NVLink between them is not modelled). SHARP is not supported here.
struct MultiRun {
  std::vector<CollectiveResult> results;  ///< by collective
  nic::RdmaRun rdma;
  std::vector<nic::Connection> connections;  ///< all collectives', in order
};
Result<MultiRun> run_collectives(const topology::Topology& topo,
                                 const std::vector<Communicator>& comms,
                                 const std::vector<CollectiveSpec>& specs,
                                 const CollectiveParams& params, const nic::NicParams& nic,
                                 const fabric::FabricParams& fabric, pdes::Sync& sync,
                                 pdes::EngineOptions engine_options);

Result<CollectiveRun> run_collective(const topology::Topology& topo, const Communicator& comm,
                                     const CollectiveSpec& spec, const CollectiveParams& params,
                                     const nic::NicParams& nic, const fabric::FabricParams& fabric,
                                     pdes::Sync& sync, pdes::EngineOptions engine_options);

/// The analytical (alpha-beta, no contention) cost of a collective, for kernels::alpha_beta.
/// Beta: the busbw factor x `bytes` over the GPU's bottleneck, min(GPUs per server x NIC RDMA
/// goodput, NVLink) between servers and NVLink inside one; alpha: the protocol's base latency and
/// one hop. The chain, which no size beats: the base latency and every hop a piece crosses one
/// after another (ring: 2(n-1) steps for AllReduce, n-1 for the others; tree: up and down; point
/// to point: one), each at its transport's one-way latency (NVLink's, or half the unloaded round
/// trip between the first two servers' NICs) plus the protocol's per-hop overhead. A lower bound
/// for the ring, tree and point-to-point algorithms (not for SHARP or NVLS, which move less).
kernels::AlphaBeta analytical_bound(const topology::Topology& topo, const fabric::Routing& routing,
                                    const Communicator& comm, Kind kind, std::int64_t bytes,
                                    const CollectiveParams& params,
                                    const fabric::FabricParams& fabric);

}  // namespace stepsim::collective
