#pragma once
/// How long a collective of the step takes: the CommModel interface, one implementation per
/// fidelity (ideal_comm.cpp, analytical_comm.cpp, packet_comm.cpp; packet_comm also runs cell
/// fidelity), and what a collective and its cost are.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/core/log_histogram.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/nic/rdma_host.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// What the communication of a step is for; the summary reports each separately.
enum class CommGroup : std::uint8_t { kTp, kCp, kEp, kPp, kDp };
inline constexpr int kCommGroups = 5;
const char* comm_group_name(CommGroup g);

/// One collective of the step, on global GPU indices (topology order, server by server).
struct CommOp {
  collective::Kind kind = collective::Kind::kAllReduce;
  std::int64_t bytes = 0;  ///< nccl-tests' S
  std::vector<std::uint32_t> gpus;
  CommGroup group = CommGroup::kTp;
  /// Megatron's TP overlap: seconds of GEMM that run beside this collective, cut into
  /// `overlap_chunks` pieces with it; the compute stream goes on after
  /// overlapped_seconds(collective, overlap_s, overlap_chunks) (compute_cost.hpp). Not part of
  /// what the collective moves (memoization ignores it).
  double overlap_s = 0;
  int overlap_chunks = 1;
};

/// The outcome of one collective.
struct CommCost {
  double seconds = 0;
  double busbw_gbs = 0;
  /// The engine was stopped (SIGINT/SIGTERM) before the collective finished: no cost, and the
  /// step stops with StepStop::kInterrupted.
  bool stopped = false;
  // Packet fidelity: what the fabric saw (zero for ideal).
  std::uint64_t drops = 0;
  std::uint64_t retransmissions = 0;
  std::int64_t paused_ps = 0;
  std::uint64_t events = 0;
  std::uint64_t digest = 0;
  /// Packet and cell fidelity: the engine's run and how its LPs were split over the ranks.
  nic::EngineTally engine;
  // Packet fidelity: what each port that did anything and each connection carried (shared,
  // read-only). Sparse: a collective on 16 servers of a 16k-GPU fabric touches few ports.
  std::shared_ptr<const std::vector<std::pair<std::uint32_t, fabric::PortStats>>> ports;
  std::shared_ptr<const nic::RdmaResults> rdma;
  std::shared_ptr<const std::vector<nic::Connection>> connections;
  /// By endpoint of `connections` (2 x connection + side): each direction's flow, the run's times.
  std::shared_ptr<const std::vector<collective::ConnectionFlow>> flows;
  std::uint64_t network_bytes = 0;  ///< bytes the run's collectives (with copies) posted to NICs
  std::shared_ptr<const LogHistogram> message_fct;  ///< RDMA messages' completion times (ps)
};

/// How long a collective takes. Implementations memoize: a step repeats few distinct ones.
class CommModel {
 public:
  virtual ~CommModel() = default;
  virtual Result<CommCost> cost(const CommOp& op) = 0;
  [[nodiscard]] virtual std::string name() const = 0;
  /// A bulk model computes every distinct collective of a step at once: run_step lists them
  /// first (the step's collectives do not depend on their times) and hands them to prepare().
  [[nodiscard]] virtual bool wants_all_ops() const { return false; }
  virtual Result<bool> prepare(const std::vector<CommOp>& /*ops*/) { return true; }
  /// True: a collective asked for again (the same kind, size and GPUs) costs what it cost the
  /// first time, and the model need not hear of the repeat, so the step may keep the cost and
  /// not ask (the memoizing models). False (a model that records every call): asked every time.
  [[nodiscard]] virtual bool repeats_free() const { return false; }
};

/// NCCL's cost model (collective::choose): no fabric, no contention.
std::unique_ptr<CommModel> make_ideal_comm(const topology::Topology& topo, const Scenario& s);
/// Alpha-beta with no contention (collective::analytical_bound), computed in bulk (Kokkos) over
/// all the step's collectives. A lower bound for the ring, tree and point-to-point algorithms (not
/// for SHARP or NVLS).
std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s);
/// What analytical models of steps on one topology share: its routing tables (built once) and
/// the costs of the collectives already costed, by (kind, size, GPUs). Valid for scenarios with
/// the same coll.* and fabric.* keys (`stepsim plan`'s layouts of one scenario).
struct AnalyticalCache;
std::shared_ptr<AnalyticalCache> make_analytical_cache(const topology::Topology& topo);
/// The analytical model of `s` drawing on and adding to `cache`.
std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s,
                                                std::shared_ptr<AnalyticalCache> cache);
/// Each distinct collective run once at packet level (or, when s.fidelity is "cell", in cells of
/// s.cell bytes) on its own GPUs, NICs and fabric (the other groups' traffic is not simulated
/// alongside). Collective over `sync`.
std::unique_ptr<CommModel> make_packet_comm(const topology::Topology& topo, const Scenario& s,
                                            pdes::Sync& sync, pdes::EngineOptions engine);

}  // namespace stepsim::workload
