#pragma once
/// Collectives in the style of NCCL over the simulated NICs and NVLink: kinds, algorithms,
/// protocols, parameters, and the communicator (which GPUs, on which NICs). See
/// docs/collectives.md.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/config/param_table.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/stat_table.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::collective {

enum class Kind : std::uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kAllToAllv,
  kSendRecv,
  /// A pipeline-parallel send: GPU 0 sends S to GPU 1 (ncclSend on one, ncclRecv on the other),
  /// one way. Not an nccl-tests operation: `stepsim bench nccl` does not take it. (SendRecv over
  /// two GPUs is an exchange: each sends S to the other.)
  kSend,
  /// Expert-parallel dispatch and combine as DeepEP's kernels run them (deepep_algorithm.cpp):
  /// S is one GPU's token bytes (tokens x bytes per token); the routing is coll.ep.*. Normal
  /// kernels: a token crosses RDMA once per destination node, to the GPU of the same local
  /// index, then NVLink to its experts' GPUs.
  kEpDispatch,
  kEpCombine,
  /// DeepEP's low-latency kernels (deepep_ll_algorithm.cpp): each token straight to each of its
  /// experts' GPUs, over RDMA (NVLink inside the server).
  kEpDispatchLl,
  kEpCombineLl,
};
/// Whether `k` is one of the expert-parallel kinds.
[[nodiscard]] inline bool is_ep_kind(Kind k) {
  return k == Kind::kEpDispatch || k == Kind::kEpCombine || k == Kind::kEpDispatchLl ||
         k == Kind::kEpCombineLl;
}
Result<Kind> parse_kind(const std::string& name);
std::string kind_name(Kind k);
/// nccl-tests' bus-bandwidth factor for `n` ranks: AllReduce 2(n-1)/n, ReduceScatter, AllGather
/// and AllToAll (n-1)/n, Broadcast, Reduce, SendRecv and Send 1 (AllToAllv: as AllToAll).
double busbw_factor(Kind k, int n);
/// What GPU `src` sends GPU `dst` of `n` in a point-to-point collective of S = `bytes`: AllToAll
/// S / n to each peer, SendRecv S to the next, Send S from GPU 0 to GPU 1 (AllToAllv is its
/// matrix, CollectiveSpec::matrix, not this).
std::int64_t p2p_bytes(Kind kind, std::int64_t bytes, int n, int src, int dst);

/// NCCL protocols: Simple (full bandwidth, highest per-step latency), LL (8-byte flag per 8 bytes
/// of data: half the bandwidth, lowest latency), LL128 (120 of every 128 bytes).
enum class Protocol : std::uint8_t { kSimple, kLl, kLl128 };
Result<Protocol> parse_protocol(const std::string& name);
std::string protocol_name(Protocol p);

struct CollectiveParams {
  /// coll.p2p.channels_per_peer and coll.p2p.nvl_chunk set to `auto` (resolve_p2p replaces it).
  static constexpr int kP2pAuto = 0;
  std::string algorithm = "ring";   ///< ring, tree, nvls, sharp (AllReduce) or auto; AllToAll: p2p
  std::string protocol = "simple";  ///< simple, ll, ll128 or auto
  /// With "auto": algorithms and protocols the tuner must not choose (NCCL_ALGO=^NVLS,
  /// NCCL_PROTO=LL,LL128 as NCCL reads them: a list allows only its names).
  std::vector<std::string> tuner_excluded_algorithms;
  std::vector<std::string> tuner_excluded_protocols;
  int channels = 8;                 ///< parallel rings (NCCL channels), each on a rail
  std::int64_t chunk = 512 * 1024;  ///< bytes per pipelined piece of a step
  int slots = 8;                    ///< pieces in flight per channel (NCCL_STEPS)
  // Point to point (AllToAll, AllToAllv, SendRecv), NCCL's p2p defaults.
  std::int64_t p2p_net_chunk = 128 * 1024;  ///< bytes per network message (NCCL_P2P_NET_CHUNKSIZE)
  /// Bytes per NVLink piece; kP2pAuto: NCCL's (NCCL_P2P_NVL_CHUNKSIZE, 512 KiB, in one server,
  /// p2p_net_chunk across servers; resolve_p2p).
  std::int64_t p2p_nvl_chunk = kP2pAuto;
  /// Channels per peer (NCCL_NCHANNELS_PER_NET_PEER); kP2pAuto: NCCL 2.29+'s count
  /// (nccl_p2p_channels_per_peer; resolve_p2p).
  int p2p_channels_per_peer = kP2pAuto;
  SimTime p2p_proxy_overhead = SimTime::ns(500);  ///< latency per network message, each end
  SimTime p2p_proxy_busy = SimTime::ns(250);  ///< proxy thread's busy time per message, each end
  // GPU and NVLink (H100 defaults): NVLink bandwidth per GPU per direction and latency.
  std::string gpu = "h100";                 ///< the GPU preset the gpu.* values came from
  DataRate nvlink = DataRate::gbps(3'600);  ///< 450 GB/s per direction (900 GB/s total)
  double nvlink_efficiency = 0.817;  ///< payload fraction of NVLink for copies (gpu_spec.cpp)
  double nvls_efficiency = 0.85;     ///< NVLS traffic relative to copies (NCCL's Hopper value)
  SimTime nvlink_latency = SimTime::ns(500);
  DataRate reduce_rate = DataRate::gbps(16'000);  ///< reduction throughput in HBM (2 TB/s)
  // The protocol's latencies. NCCL's tuning.cc (ring) gives a base latency per collective and a
  // per-hop latency per step (us; Simple / LL / LL128): NVLink 3.4 / 0.6 / 1.9, network
  // 14 / 2.7 / 4.0, base 8.4 / 6.6 / 14. The simulator models the transport's own latency
  // (NVLink 0.5 us; ~2.5 us NIC to NIC through a leaf), so a hop adds only the overhead on top:
  // NCCL's value minus that, at least 0 (LL's network hop is all transport).
  SimTime base_simple = SimTime::ns(8'400);
  SimTime base_ll = SimTime::ns(6'600);
  SimTime base_ll128 = SimTime::ns(14'000);
  SimTime nvlink_overhead_simple = SimTime::ns(2'900);
  SimTime net_overhead_simple = SimTime::ns(11'500);
  SimTime nvlink_overhead_ll = SimTime::ns(100);
  SimTime net_overhead_ll = SimTime::ns(200);
  SimTime nvlink_overhead_ll128 = SimTime::ns(1'400);
  SimTime net_overhead_ll128 = SimTime::ns(1'500);
  // NVLS-tree's own step latencies (tuning.cc, Simple): NVLink 25 us for the NVLS round inside a
  // server (the reduce and the multicast store, half each here), network 20.9 us per tree hop;
  // minus the transport's own (NVLink 0.5 us, ~2.5 us NIC to NIC).
  SimTime nvls_overhead = SimTime::ns(24'500);
  SimTime nvls_tree_net_overhead = SimTime::ns(18'400);
  /// NVLS chunk (NCCL_NVLS_CHUNKSIZE); NVLS-tree caps it at 64 KiB from 4 servers
  /// (NCCL_NVLSTREE_MAX_CHUNKSIZE's default, transport/nvls.cc).
  std::int64_t nvls_chunk = 128 * 1024;
  std::uint8_t prio = 3;  ///< traffic class of the collective's RDMA traffic
  // SHARP (in-network aggregation on the switches, algorithm "sharp").
  DataRate sharp_alu = DataRate::bps(0);     ///< a switch's reduction throughput; 0: its port rates
  SimTime sharp_latency = SimTime::ns(300);  ///< a switch's aggregation latency per packet
  int sharp_trees = 64;                      ///< aggregation trees a switch can hold at once
  std::int64_t sharp_window = 4 << 20;       ///< bytes a GPU may have in a tree, unreduced
  int sharp_enable = 0;  ///< `--algo auto` may choose SHARP algorithms (NCCL_COLLNET_ENABLE)
  std::int64_t sharp_payload = 4096;  ///< payload per packet (run_collective: the MTU)
  // Expert parallelism (the ep_* kinds): the routing of each GPU's tokens, balanced over the
  // experts (DeepEP's tests and the benchmarks force-balance them).
  int ep_experts = 0;    ///< routed experts over the communicator (0: one per GPU)
  int ep_top_k = 8;      ///< experts per token
  int ep_max_nodes = 0;  ///< node-limited routing: servers a token may reach (0: no limit)
  /// DeepEP low-latency kernels: the kernel's own time beside its transfers (launch, the
  /// per-expert counts the receivers wait for, packing), each dispatch or combine.
  SimTime ep_ll_overhead = SimTime::us(20);
  /// DeepEP's achieved fraction of the NIC's RDMA goodput (its per-token metadata, chunk tail
  /// signalling, GPU-issued writes): each RDMA piece occupies the NIC as payload / this.
  double ep_rdma_efficiency = 0.888;

  [[nodiscard]] Result<bool> validate() const;
  /// Wire bytes per payload byte and the per-hop latency of the protocol.
  [[nodiscard]] double wire_factor() const;
  [[nodiscard]] SimTime hop_overhead(bool nvlink) const;
  [[nodiscard]] SimTime base_latency() const;
  /// NVLink payload rate per direction: gpu.nvlink x gpu.nvlink_efficiency.
  [[nodiscard]] DataRate nvlink_payload() const;
  /// Sets the gpu.* values from a shipped GPU.
  void apply_gpu(const gpu::GpuSpec& g);
};

/// The collective parameters by key ("coll.channels", "gpu.nvlink", ...) for --set, files and
/// `stepsim list collective`. Refers to `p`.
config::ParamTable collective_param_table(CollectiveParams& p);

/// What the tuner chose, and the times it predicted (seconds) for each candidate.
struct Choice {
  std::string algorithm;
  std::string protocol;
  double predicted_s = 0;
};

/// NCCL's tuner in spirit (src/graph/tuning.cc): for every allowed algorithm and protocol,
/// time = base + steps x (transport + per-hop overhead) + busbw factor x S / bandwidth, and the
/// smallest wins. Bandwidth of the ring: min(GPUs per server x NIC rate, NVLink) between servers,
/// NVLink inside one; the tree gets 2/3 of it (an inner node sends up once and down twice) and
/// LL / LL128 divide by their wire factor. `algorithm`/`protocol` of `p` other than "auto" are
/// kept as given. `nic_rate` is one NIC's RDMA goodput.
Choice choose(Kind kind, std::int64_t bytes, int gpus, std::uint32_t gpus_per_server,
              const CollectiveParams& p, DataRate nic_rate);

/// One GPU of a communicator: its server, its index in the server, and its NIC (the rail).
struct Gpu {
  topology::NodeId server = 0;
  std::uint32_t local = 0;
  topology::PortId nic = 0;
};

/// The GPUs of a collective, in rank order.
struct Communicator {
  std::vector<Gpu> gpus;
  std::uint32_t gpus_per_server = 1;
  [[nodiscard]] int size() const { return static_cast<int>(gpus.size()); }
};

/// NCCL 2.29+'s channels per peer for a communicator of `ranks` GPUs on `servers` servers whose
/// GPUs each have a NIC of rate `nic` (graph/paths.cc, ncclTopoGetNchannels and
/// ncclTopoComputeP2pChannels). Across servers: ceil(NIC GB/s / 14) (NCCL_P2P_PER_CHANNEL_NET_BW)
/// rounded up to a power of 2, halved while it times ceil(ranks / 8) (the schedule's groups of
/// NCCL_MAX_DEV_WORK_P2P_PER_BATCH) exceeds the 16 p2p channels of a multi-server H100
/// communicator, at least 1. In one server NVLink's count (twice the NVLinks) exceeds the 32 p2p
/// channels, so 32.
int nccl_p2p_channels_per_peer(int ranks, int servers, DataRate nic);

/// `p` with the `auto` coll.p2p.channels_per_peer and coll.p2p.nvl_chunk replaced by NCCL's for a
/// collective of `kind` on `ranks` GPUs over `servers` servers with NICs of rate `nic`: the
/// channels by nccl_p2p_channels_per_peer, the NVLink chunk NCCL_P2P_NVL_CHUNKSIZE (512 KiB) in
/// one server and coll.p2p.net_chunk across servers (init.cc computeBuffSizes: a multi-server
/// communicator moves every p2p peer in network-sized steps). DeepEP's kernels are not NCCL's:
/// for them `auto` is 2 channels and 512 KiB. Explicit values are kept.
CollectiveParams resolve_p2p(CollectiveParams p, Kind kind, int ranks, int servers, DataRate nic);

/// One direction of an RC connection in a collective run (the endpoint that sends): its
/// messages' send completions and the peer's receive completions, summed. Times are the run's
/// (it starts at 0).
struct ConnectionFlow {
  std::uint64_t bytes = 0;  ///< payload bytes of its messages (wire bytes of the protocol)
  std::uint64_t messages = 0;
  std::uint64_t packets = 0;        ///< MTU packets sent, retransmissions included
  std::uint64_t retransmitted = 0;  ///< of those, sent again
  std::uint64_t ecn_marked = 0;     ///< packets that arrived CE-marked (a cell counts once)
  std::int64_t first_post_ps = -1;  ///< its first message's post; -1: it sent nothing
  std::int64_t first_byte_ps = -1;  ///< its first packet on the wire
  std::int64_t last_done_ps = -1;   ///< its last send completion
};

/// ConnectionFlow's statistics (core/stat_table.hpp), named as the HDF5 /flows columns.
constexpr auto stat_table(std::type_identity<ConnectionFlow>) {
  using S = ConnectionFlow;
  return std::array{
      stat::sum("bytes", "B", &S::bytes),
      stat::sum("messages", "", &S::messages),
      stat::sum("packets", "", &S::packets),
      stat::sum("retransmitted", "", &S::retransmitted),
      stat::sum("ecn_marked", "", &S::ecn_marked),
      stat::min("start_ps", "ps", &S::first_post_ps),
      stat::min("first_byte_ps", "ps", &S::first_byte_ps),
      stat::max("end_ps", "ps", &S::last_done_ps),
  };
}

/// The first `n` GPUs of the topology, server by server; GPU i of a server uses NIC
/// i mod (NICs of the server). The error says how many GPUs the topology has.
Result<Communicator> make_communicator(const topology::Topology& topo, int n);
/// The GPUs `gpus` (global indices: the topology's GPUs server by server), in that order. Every
/// server must hold the same number of them, in consecutive ranks.
Result<Communicator> make_communicator(const topology::Topology& topo,
                                       const std::vector<std::uint32_t>& gpus);
/// By global port id: the global index of the GPU whose NIC (rail) the port is, the first GPU
/// of its server that uses it (topology::gpu_of_nic); topology::kNone for switch ports.
std::vector<std::uint32_t> gpu_of_nic_ports(const topology::Topology& topo);

}  // namespace stepsim::collective
