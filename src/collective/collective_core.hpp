#pragma once
// What every collective algorithm's runtime shares: the communicator, the spec and parameters,
// each GPU's NVLink egress timeline, the RC connections, the typed timers, and each GPU's
// records (done time, NVLink and network bytes, message completion times).

#include <cstdint>
#include <vector>

#include "stepsim/collective/algorithm_run.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/log_histogram.hpp"

namespace stepsim::collective {

class CollectiveCore {
 public:
  /// `comm` and `params` must outlive the core.
  CollectiveCore(const Communicator& comm, CollectiveSpec spec, const CollectiveParams& params);

  [[nodiscard]] const Communicator& comm() const { return comm_; }
  [[nodiscard]] const Gpu& gpu(std::uint32_t rank) const { return comm_.gpus[rank]; }
  [[nodiscard]] const CollectiveSpec& spec() const { return spec_; }
  [[nodiscard]] const CollectiveParams& params() const { return p_; }
  [[nodiscard]] int size() const { return n_; }
  /// The communicator's place of the server node `node`.
  [[nodiscard]] std::uint32_t server_rank(topology::NodeId node) const {
    return server_rank_of_node_[node];
  }
  /// Whether GPU `rank` is on the server of the callback.
  [[nodiscard]] bool local(const nic::Verbs& v, std::uint32_t rank) const {
    return comm_.gpus[rank].server == v.server();
  }

  /// Channels for the spec's size, at most coll.channels: at least 64 KiB per GPU and channel
  /// when a channel's data is split among the GPUs (ring, NVLS), else (`per_gpu` false: the
  /// tree, whose every GPU handles all of its channel's data) at least 64 KiB per channel.
  [[nodiscard]] int channels_for_size(bool per_gpu = true) const;
  /// The ring's (and chain's) channels for the spec's size, at most coll.channels, by NCCL's
  /// rule (enqueue.cc: fewer channels while a channel's bytes are under threads x the per-thread
  /// threshold; tuning.cc scales that threshold by the ranks only for ring/LL): at least 64 KiB
  /// per channel with Simple, 8 KiB with LL128 (its per-thread threshold is an eighth of
  /// Simple's) and 8 KiB per rank with LL. Not per GPU: NCCL's ring loops over chunks of
  /// chunk x ranks, shrinking the chunk when a channel's data is smaller, and keeps its channels.
  [[nodiscard]] int ring_channels_for_size() const;
  /// The member (0 .. GPUs per server - 1) at which channel `c` enters and leaves every server:
  /// channels go round the server's NICs first (channel c on the c mod N-th distinct NIC of the
  /// members), then round the members that share that NIC, so c channels use min(c, N) NICs.
  /// One NIC per member: c mod G; one NIC for all: c mod G too.
  [[nodiscard]] std::uint32_t rail_member(int c) const;
  /// Wire bytes of a payload under the protocol.
  [[nodiscard]] std::int64_t wire_bytes(std::int64_t payload) const;

  /// NVLink transfers' payload rate (NVLS: a fraction of the copies').
  void set_nvlink_rate(DataRate rate) { nvlink_rate_ = rate; }
  /// Queues `wire_bytes` on GPU `gpu`'s NVLink egress from `now`; returns when they arrive.
  SimTime nvlink_hop(std::uint32_t gpu, SimTime now, std::int64_t wire_bytes);
  /// Makes GPU `gpu`'s NVLink egress the timeline `*free`, shared with other collectives on the
  /// same GPU (the whole-step run); it must outlive the core. Only the GPU's own server touches it.
  void share_nvlink(std::uint32_t gpu, SimTime* free) { nvlink_shared_[gpu] = free; }
  /// Posts an RDMA WRITE with immediate of `wire_bytes` for GPU `gpu` on `endpoint`.
  void post_network(nic::Verbs& v, std::uint32_t gpu, std::uint32_t endpoint,
                    std::int64_t wire_bytes);
  /// Counts bytes GPU `gpu` hands to its NIC without a post (in-network packets).
  void count_network(std::uint32_t gpu, std::int64_t bytes) {
    network_bytes_[gpu] += static_cast<std::uint64_t>(bytes);
  }
  /// A new RC connection from NIC port `a` to `b` (collective priority, own entropy); its index.
  std::uint32_t add_connection(topology::PortId a, topology::PortId b);
  [[nodiscard]] const std::vector<nic::Connection>& connections() const { return conns_; }

  /// Calls the run's on_timer with `payload` after `delay` (the timer's event carries it).
  static void schedule(nic::Verbs& v, SimTime delay, const TimerPayload& payload);

  [[nodiscard]] bool gpu_done(std::uint32_t gpu) const { return gpu_done_ps_[gpu] >= 0; }
  /// GPU `gpu` finished at `ps`.
  void set_gpu_done(std::uint32_t gpu, std::int64_t ps) { gpu_done_ps_[gpu] = ps; }
  /// One of GPU `gpu`'s `parts` parts (its channels' lanes or tree nodes) finished at `ps`; the
  /// GPU is done with the last.
  void part_done(std::uint32_t gpu, std::int64_t ps, int parts);
  /// A send completion: its time from post (the message FCT histogram) and its connection
  /// direction's flow counters.
  void record_send(const nic::Verbs& v, const nic::Completion& c);
  /// A receive completion: the CE-marked packets of its connection direction's flow.
  void record_recv(const nic::Completion& c);
  /// Gathers every rank's records (collective over `sync`).
  [[nodiscard]] CollectiveResult result(pdes::Sync& sync) const;

 private:
  const Communicator& comm_;
  CollectiveSpec spec_;
  const CollectiveParams& p_;
  int n_ = 0;
  DataRate nvlink_rate_;
  std::vector<std::uint32_t> server_rank_of_node_;  // by node id: server's place in the comm
  std::vector<std::vector<std::uint32_t>> members_by_nic_;  // the first server's, by NIC
  std::vector<nic::Connection> conns_;
  std::vector<SimTime> nvlink_free_;          // by GPU: its NVLink egress is free from
  std::vector<SimTime*> nvlink_shared_;       // by GPU: a shared timeline instead, or null
  std::vector<int> parts_done_;               // by GPU
  std::vector<std::int64_t> gpu_done_ps_;     // by GPU
  std::vector<std::uint64_t> nvlink_bytes_;   // by GPU
  std::vector<std::uint64_t> network_bytes_;  // by GPU
  std::vector<LogHistogram> fct_;             // by server (communicator order)
  // By endpoint, each touched only by its endpoint's server: what it sent (flows_, without
  // ecn_marked) and the CE-marked packets it received (ecn_in_).
  std::vector<ConnectionFlow> flows_;
  std::vector<std::uint64_t> ecn_in_;
};

/// ceil(a / b) for b > 0.
[[nodiscard]] inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace stepsim::collective
