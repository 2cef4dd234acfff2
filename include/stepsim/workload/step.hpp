#pragma once
/// One training step: the per-GPU graph of ops (forward and backward per layer and micro-batch
/// under the 1F1B or interleaved pipeline schedule, TP / EP / CP collectives per layer, pipeline
/// sends, data-parallel gradient reduction in buckets overlapped with the last backward,
/// parameter all-gathers, the optimizer), executed on the GPUs of one pipeline. Data-parallel
/// replicas and TP ranks are symmetric, so the pipeline of global rank 0 is simulated, one GPU
/// per stage; its collectives run on the groups they belong to in the cluster (see CommModel).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
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
};

/// The outcome of one collective.
struct CommCost {
  double seconds = 0;
  double busbw_gbs = 0;
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
};

/// NCCL's cost model (collective::choose): no fabric, no contention.
std::unique_ptr<CommModel> make_ideal_comm(const topology::Topology& topo, const Scenario& s);
/// Alpha-beta with no contention (collective::analytical_bound), computed in bulk (Kokkos) over
/// all the step's collectives. A lower bound for the ring, tree and point-to-point algorithms (not
/// for SHARP or NVLS).
std::unique_ptr<CommModel> make_analytical_comm(const topology::Topology& topo, const Scenario& s);
/// Each distinct collective run once at packet level (or, when s.fidelity is "cell", in cells of
/// s.cell bytes) on its own GPUs, NICs and fabric (the other groups' traffic is not simulated
/// alongside). Collective over `sync`.
std::unique_ptr<CommModel> make_packet_comm(const topology::Topology& topo, const Scenario& s,
                                            pdes::Sync& sync, pdes::EngineOptions engine);

/// One op on a GPU's compute stream, as the timeline shows it.
struct OpRecord {
  std::uint32_t stage = 0;
  std::uint8_t kind = 0;    ///< 0 forward, 1 backward, 2 optimizer, 3 comm (blocking), 4 wait
  std::uint8_t group = 0;   ///< CommGroup of a comm op
  std::uint32_t micro = 0;  ///< micro-batch
  std::uint32_t chunk = 0;  ///< model chunk (virtual stage)
  std::uint32_t layer = 0;
  double start_s = 0;
  double end_s = 0;
};

/// One collective of the step as it ran.
struct CollectiveRecord {
  std::uint32_t id = 0;
  std::uint32_t stage = 0;
  CommGroup group = CommGroup::kTp;
  collective::Kind kind = collective::Kind::kAllReduce;
  std::int64_t bytes = 0;
  std::uint32_t gpus = 0;
  double start_s = 0;
  double end_s = 0;
  double busbw_gbs = 0;
};

/// One RDMA connection of a collective simulated at packet level: the flows of the step are
/// these, each standing for every repetition of its collective (`repeats`).
struct FlowRow {
  std::uint32_t collective = 0;  ///< the first CollectiveRecord that ran this collective
  std::uint32_t repeats = 0;     ///< how many collectives of the step it stands for
  std::uint32_t src_nic = 0;     ///< global port ids
  std::uint32_t dst_nic = 0;
  std::uint64_t bytes = 0;  ///< payload bytes of one repetition, both directions
  std::uint64_t messages = 0;
  std::uint64_t packets = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t ecn_marked = 0;
};

/// One direction of a link (its sending port) over the whole step: each distinct collective's
/// counters times its repetitions.
struct LinkRow {
  std::uint32_t port = 0;  ///< global port id (the sender)
  std::uint32_t node = 0;
  std::uint32_t link = 0;
  std::uint32_t tier = 0;  ///< of the sending node: 0 server, 1 leaf, 2 spine, 3 core
  double bytes = 0;
  double packets = 0;
  double ecn_marks = 0;
  double pause_sent = 0;
  double drops = 0;
  double busy_s = 0;    ///< time spent serializing
  double paused_s = 0;  ///< time the port was paused by PFC
};

struct StepResult {
  double step_s = 0;
  double model_flops = 0;  ///< per step, ModelSpec::model_flops_per_token x tokens
  double mfu = 0;
  double peak_flops = 0;
  std::uint32_t critical_stage = 0;  ///< the stage that finished last
  // The critical stage's time, which adds up to step_s:
  double compute_s = 0;                             ///< forward, backward, recompute
  double exposed_s[kCommGroups] = {0, 0, 0, 0, 0};  ///< comm the compute stream waited for
  double bubble_s = 0;     ///< waiting for other stages (pipeline fill, drain, sends)
  double optimizer_s = 0;  ///< the optimizer step
  // Every collective of the step, by group: count, mean busbw, bytes.
  std::uint64_t collectives[kCommGroups] = {0, 0, 0, 0, 0};
  double busbw_gbs[kCommGroups] = {0, 0, 0, 0, 0};
  double comm_bytes[kCommGroups] = {0, 0, 0, 0, 0};
  // Packet fidelity, summed over the distinct collectives simulated.
  std::uint64_t distinct_collectives = 0;
  std::uint64_t drops = 0;
  std::uint64_t retransmissions = 0;
  double paused_s = 0;
  std::uint64_t events = 0;
  nic::EngineTally engine;
  /// Network groups' collectives (all of them): completion-time percentiles.
  double cct_p50_us = 0, cct_p99_us = 0, cct_max_us = 0;
  /// Packet fidelity: RDMA messages' completion times (post to send completion) over the step
  /// (each distinct collective's messages times its repetitions), to the histogram's 9% bins.
  double fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;
  std::uint64_t messages = 0;
  std::uint64_t digest = 0;
  bool complete = true;      ///< false: stopped at `end` or interrupted
  bool interrupted = false;  ///< stopped by a signal (SIGINT/SIGTERM)
  std::vector<OpRecord> ops;
  std::vector<CollectiveRecord> colls;
  std::vector<FlowRow> flows;  ///< packet fidelity
  std::vector<LinkRow> links;  ///< packet fidelity: ports that carried anything
};

/// Runs the step of `s` on `topo` with `comm` for the collectives. `s` must have passed
/// validate(). `progress` (may be null) is called after each op with the simulated time; when
/// it returns false, or a packet run is stopped by a signal, the result holds what was done
/// (complete = false, interrupted = true).
Result<StepResult> run_step(const Scenario& s, const topology::Topology& topo, CommModel& comm,
                            const std::function<bool(double)>& progress = {});

/// The GPU each global rank runs on (Megatron's order: TP fastest, then CP, DP, PP).
struct Placement {
  int tp = 1, cp = 1, dp = 1, pp = 1;
  [[nodiscard]] std::uint32_t rank(int t, int c, int d, int p) const {
    return static_cast<std::uint32_t>(((p * dp + d) * cp + c) * tp + t);
  }
};

}  // namespace stepsim::workload
