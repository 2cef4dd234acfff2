#pragma once
/// Runs one collective on the simulated GPUs: an RDMA application (nic::RdmaApp) that moves the
/// collective's pieces over NVLink inside a server (modelled in the server: a per-GPU link with
/// a bandwidth and a latency) and over RDMA WRITEs with immediate between servers.
///
/// Ring algorithms (NCCL's): `channels` rings, channel c on rail r = c mod NICs per server; in a
/// server the ring enters at GPU r and visits the server's GPUs in order; between servers it
/// leaves from NIC r to NIC r of the next server (the last GPU's data reaches NIC r over NVLink
/// first: PXN), so every network hop stays on one rail. Each GPU's share of a channel is cut
/// into n segments (AllReduce = ReduceScatter + AllGather: 2(n-1) steps) and each step into
/// pieces of `chunk` bytes that are forwarded as soon as the piece of the previous step arrived
/// (and was reduced), with at most `slots` pieces in flight per ring edge. Broadcast and Reduce
/// are pipelined chains along the same rings. AllToAll sends every peer its share directly
/// (cross-rail data first crosses NVLink to the GPU on the destination's rail).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/sharp.hpp"
#include "stepsim/core/log_histogram.hpp"
#include "stepsim/core/ring_queue.hpp"
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
  [[nodiscard]] double algbw_gbs(std::int64_t bytes) const;  ///< GB/s (1e9), nccl-tests' algbw
  /// Every GPU finished.
  [[nodiscard]] bool complete() const {
    return std::all_of(gpu_done_ps.begin(), gpu_done_ps.end(),
                       [](std::int64_t t) { return t >= 0; });
  }
};

class CollectiveApp final : public nic::RdmaApp {
 public:
  /// `comm`, `params` must be valid and outlive the app.
  CollectiveApp(const Communicator& comm, CollectiveSpec spec, const CollectiveParams& params);

  /// The RC connections the collective needs (their endpoints are what the app posts on).
  [[nodiscard]] const std::vector<nic::Connection>& connections() const { return conns_; }
  void on_start(nic::Verbs& verbs) override;
  void on_cq(nic::Verbs& verbs, std::uint32_t endpoint) override;
  void on_timer(nic::Verbs& verbs, std::uint32_t tag) override;
  void on_in_network(nic::Verbs& verbs, topology::PortId nic, const fabric::Packet& pkt) override;
  /// Gathers every rank's records (collective over `sync`).
  [[nodiscard]] CollectiveResult result(pdes::Sync& sync) const;

 private:
  // One GPU's part of one channel: what it sends to the next GPU and receives from the previous.
  struct Lane {
    std::uint32_t gpu = 0;       // communicator rank
    std::uint32_t prev = 0;      // lane that sends to this one (kNone: none)
    std::uint32_t next = 0;      // lane this one sends to (kNone: none)
    bool next_intra = false;     // next lane is in the same server (NVLink)
    bool pxn = false;            // network send that first crosses NVLink to the rail's GPU
    std::uint32_t endpoint = 0;  // network send: side-a endpoint
    int pos = 0;                 // position in the ring
    std::int64_t dep = 0;        // piece i needs piece i - dep received (huge: a source)
    std::int64_t total_send = 0;
    std::int64_t total_recv = 0;
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t recvd = 0;
    std::int64_t arrived = 0;     // pieces arrived, their reduce/latency timer pending
    std::int64_t pxn_posted = 0;  // PXN: pieces whose NVLink hop finished and were posted
    std::int64_t done_ps = -1;
  };
  // AllToAll: what one GPU sends to one peer.
  struct Flow {
    std::int64_t bytes = 0;
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    bool intra = false;
    bool pxn = false;
    std::uint32_t endpoint = 0;
    std::int64_t pieces = 0;
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t pxn_posted = 0;
  };

  // Double binary tree (AllReduce): one node per GPU and channel; edge 3 is the parent, edges
  // 0..2 the children. On a child edge, `recvd` counts pieces reduced up from that child and
  // `sent` pieces broadcast down to it; on the parent edge, `sent` counts pieces sent up and
  // `recvd` pieces that came down.
  struct TreeEdge {
    std::uint32_t peer = 0xffffffffu;  // tree node at the other end
    std::uint32_t peer_slot = 0;       // this edge's slot at the peer
    bool intra = false;
    std::uint32_t endpoint = 0;  // network: the endpoint this node posts on
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t arrived = 0;
    std::int64_t recvd = 0;
  };
  struct TreeNode {
    std::uint32_t gpu = 0;
    int children = 0;
    TreeEdge edge[4];  // 0..2 children, 3 parent
    std::int64_t done_ps = -1;
  };
  static constexpr std::uint32_t kUp = 3;

  [[nodiscard]] bool point_to_point() const {
    return spec_.kind == Kind::kAllToAll || spec_.kind == Kind::kAllToAllv ||
           spec_.kind == Kind::kSendRecv;
  }
  [[nodiscard]] std::int64_t piece_bytes(const Lane& l, std::int64_t i) const;
  [[nodiscard]] std::int64_t tree_piece_bytes(std::int64_t i) const;
  void build_trees();
  void tree_progress(nic::Verbs& v, std::uint32_t node);
  void tree_transfer(nic::Verbs& v, std::uint32_t node, std::uint32_t slot, std::int64_t i);
  void tree_arrived(nic::Verbs& v, std::uint32_t node, std::uint32_t slot);
  void nvls_start(nic::Verbs& v);
  void nvls_event(nic::Verbs& v, std::uint32_t tag);
  [[nodiscard]] bool reduces(const Lane& l, std::int64_t i) const;
  void build_rings();
  void build_alltoall();
  void try_send(nic::Verbs& v, std::uint32_t lane);
  void start(nic::Verbs& v);
  void post_network(nic::Verbs& v, std::uint32_t endpoint, std::int64_t bytes);
  void on_received(nic::Verbs& v, std::uint32_t lane, std::int64_t bytes);
  void lane_progress(nic::Verbs& v, std::uint32_t lane);
  void alltoall_send(nic::Verbs& v, std::uint32_t flow);
  void gpu_received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes);
  SimTime nvlink_hop(std::uint32_t gpu, SimTime now, std::int64_t wire_bytes);
  void sharp_start(nic::Verbs& v);
  void sharp_send(nic::Verbs& v, std::uint32_t gpu);

  const Communicator& comm_;
  CollectiveSpec spec_;
  const CollectiveParams& p_;
  int n_ = 0;
  int channels_ = 1;
  int steps_ = 1;
  std::int64_t channel_bytes_ = 0;
  std::int64_t seg_ = 0;  // segment bytes (rings) or channel bytes (chains)
  std::int64_t pieces_per_step_ = 1;
  std::vector<Lane> lanes_;
  std::vector<Flow> flows_;
  std::vector<TreeNode> tree_;
  // NVLS (one server): per channel and piece, how many GPUs' contributions reached the switch;
  // per GPU, how many multicast pieces it has received.
  bool nvls_ = false;
  std::vector<int> nvls_in_;            // by channel x piece
  std::vector<std::int64_t> nvls_got_;  // by GPU
  // SHARP: GPU g's shard (S / GPUs per server) goes up tree g mod GPUs per server in packets;
  // the shard is reduce-scattered over NVLink in chunks first, and each chunk's result is
  // all-gathered over NVLink once it is back.
  bool sharp_ = false;
  std::int64_t sharp_packets_ = 0;                       // per GPU
  std::int64_t sharp_chunks_ = 0;                        // per GPU
  std::int64_t sharp_window_ = 1;                        // packets
  std::int64_t sharp_chunk_ = 1;                         // packets per chunk
  static constexpr std::uint32_t kTagSharp = 11u << 28;  // timer: GPU (low bits) may send more
  struct SharpGpu {
    std::int64_t sent = 0;
    std::int64_t back = 0;  // packets whose result came back
    bool timer = false;     // a wake-up for the next chunk is pending
    SimTime done;
    std::vector<SimTime> ready;     // by chunk: reduce-scatter over NVLink done
    std::vector<std::int64_t> got;  // by chunk: result bytes back
  };
  std::vector<SharpGpu> sharp_gpu_;                 // by GPU
  std::vector<std::uint32_t> server_rank_of_node_;  // by node id: server's place in the comm
  [[nodiscard]] std::int64_t sharp_packet_bytes(std::int64_t i) const;
  [[nodiscard]] std::int64_t sharp_chunk_bytes(std::int64_t c) const;
  std::vector<nic::Connection> conns_;
  std::vector<std::uint32_t> owner_of_endpoint_;  // lane (rings) or destination GPU (alltoall)
  std::vector<RingQueue<std::uint32_t>> posted_flows_;  // alltoall: side-a endpoint -> posts
  DataRate nvlink_rate_;                                // payload rate of NVLink transfers
  std::vector<SimTime> nvlink_free_;                    // by GPU: its NVLink egress is free from
  std::vector<int> lanes_done_;                         // by GPU
  std::vector<std::int64_t> gpu_done_ps_;               // by GPU
  std::vector<std::int64_t> expect_bytes_;              // alltoall: by GPU
  std::vector<std::int64_t> got_bytes_;                 // alltoall: by GPU
  std::vector<std::uint64_t> nvlink_bytes_;             // by GPU
  std::vector<std::uint64_t> network_bytes_;            // by GPU
  std::vector<LogHistogram> fct_;                       // by server (communicator order)
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
