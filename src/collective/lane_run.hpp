#pragma once
// The runtime of the ring and chain algorithms (NCCL's): `channels` rings, channel c on rail
// r = c mod NICs per server; in a server the ring enters at GPU r and visits the server's GPUs in
// order; between servers it leaves from NIC r to NIC r of the next server (the last GPU's data
// reaches NIC r over NVLink first: PXN), so every network hop stays on one rail. Ring: each GPU's
// share of a channel is cut into n segments (AllReduce = ReduceScatter + AllGather: 2(n-1)
// steps). Chain (Broadcast, Reduce): the ring from the root (Broadcast) or to it (Reduce), one
// step. Each step is cut into pieces of `chunk` bytes, forwarded once the piece of the previous
// step arrived (and was reduced), with at most `slots` pieces in flight per edge.
//
// A piece's progress is counted, not named: pieces of one edge arrive in order (one QP, or one
// NVLink timeline), so "piece i - dep has arrived" is "arrived count > i - dep". The protocol's
// per-hop overhead and the reduction are a delay between a piece's arrival and the moment it
// counts as received (and may be forwarded); they cost latency, not bandwidth.
//
// NVLink: a channel is a thread block that copies one piece at a time (it copies, then signals
// the peer, then takes the next piece), and a GPU's channels copy concurrently, sharing its
// NVLink. So a lane has at most one piece on NVLink; the GPU's egress timeline serves its lanes'
// pieces in turn (round robin at piece granularity: a fair share). Booking a lane's further
// pieces ahead (up to `slots`) would let one lane's backlog delay another's piece by up to
// slots x channels pieces, starving the PXN lane, whose slots also cover the network round trip.

#include <cstdint>
#include <vector>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"

namespace stepsim::collective {

class LaneRun final : public AlgorithmRun {
 public:
  /// `chain`: Broadcast or Reduce along the ring (one step), else a ring collective.
  LaneRun(CollectiveCore& core, bool chain);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

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
    bool on_nvlink = false;       // a piece of this lane is on its GPU's NVLink
    std::int64_t done_ps = -1;
  };
  enum Event : std::uint32_t {
    kNvlink = 1,  // a piece crossed NVLink into lane `index`
    kRecv,        // a piece of lane `index` counts as received
    kPxn,         // lane `index`'s PXN hop is done: post the piece to the NIC
  };

  [[nodiscard]] std::int64_t piece_bytes(const Lane& l, std::int64_t i) const;
  [[nodiscard]] bool reduces(std::int64_t i) const;
  [[nodiscard]] std::vector<std::uint32_t> ring_order(std::uint32_t rail) const;
  void build();
  void build_channel(int c);
  void connect(Lane& l, std::uint32_t next_gpu, std::uint32_t rail);
  void try_send(nic::Verbs& v, std::uint32_t lane);
  void on_received(nic::Verbs& v, std::uint32_t lane, std::int64_t bytes);
  void progress(nic::Verbs& v, std::uint32_t lane);

  bool chain_;
  int n_;
  int channels_ = 1;
  int steps_ = 1;
  std::int64_t channel_bytes_ = 0;
  std::int64_t seg_ = 0;  // segment bytes (rings) or channel bytes (chains)
  std::int64_t pieces_per_step_ = 1;
  std::vector<Lane> lanes_;
  std::vector<std::uint32_t> owner_of_endpoint_;  // the lane that posts or receives on it
};

/// The ring and the chain: one runtime (LaneRun) and the ring's costs; they differ in name,
/// description and kinds.
class LaneAlgorithm : public CollectiveAlgorithm {
 public:
  /// `chain`: the chain's runtime.
  explicit LaneAlgorithm(bool chain) : chain_(chain) {}
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    return ring_tuner_cost(s, r);
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    return ring_bound_chain(s);
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<LaneRun>(core, chain_);
  }

 private:
  bool chain_;
};

}  // namespace stepsim::collective
