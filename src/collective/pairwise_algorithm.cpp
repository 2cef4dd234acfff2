// Pairwise point to point (NCCL's AllToAll, AllToAllv and nccl-tests' SendRecv): every GPU sends
// each peer its bytes directly, peer g + 1, g + 2, ... in turn. Peers in the same server are
// reached over NVLink; peers in other servers through the destination GPU's rail (data for a GPU
// on another rail crosses NVLink first: PXN), on one RC connection per (source server,
// destination GPU). NCCL's p2p scheduling: a peer's bytes go in pieces of
// NCCL_P2P_NET_CHUNKSIZE (network, 128 KiB) or NCCL_P2P_NVL_CHUNKSIZE (NVLink, 512 KiB), over
// coll.p2p.channels_per_peer channels of coll.slots (NCCL_STEPS) pieces in flight each. Every
// network message passes the proxy of the GPU whose NIC posts it (the PXN GPU for another rail)
// and again that of the receiving GPU; one proxy thread per GPU serves its sends and receives in
// turn. At each end a message takes coll.p2p.proxy_overhead (0.5 us: NCCL's network overhead,
// 1 us per network step on x86 in tuning.cc getNetOverhead, a latency term there, split between
// the two ends), of which the thread is busy coll.p2p.proxy_busy (0.25 us: posting or polling
// it); the rest is latency that the slots in flight overlap. So a GPU's proxy handles 2(n - G)
// messages of at most one chunk per peer in an AllToAll over n GPUs, G per server, one after the
// other: many small peers pay 2 x busy per message where the wire would take less, while full
// chunks keep a NIC at line rate (128 KiB per 0.5 us of proxy for a send and a receive: 262 GB/s,
// above a 1.6T NIC's 196 GB/s goodput). The first pieces go round robin over the peers (as the
// proxy progresses its ops).
// Over NVLink a flow has at most one NVLink chunk waiting on its GPU's NVLink egress (its
// GPU's flows share NVLink byte for byte, as concurrent copies do).
// Over the network NCCL's p2p uses shared buffers (transport/net.cc): a proxy keeps, per local
// GPU and channel, NCCL_SHARED_STEPS (16) chunk slots, shared by the ops of one batch on that
// channel; a batch holds the peers of one schedule group (init.cc ncclP2pSchedule: gcd(8, G)
// ranks of one remote server, NCCL_MAX_DEV_WORK_P2P_PER_BATCH 8 at most). With nsubs of them,
// each has at most min(NCCL_STEPS, 16 / nsubs) chunks in flight (send/recvProxyProgress'
// maxDepth). The receiving GPU's proxy holds the group's 8 senders on its channel (one
// multi-receive when they come through one PXN GPU, reposted only when all 8 have room; the
// sender's writes wait for all 8 to match: net_ib ncclIbIsend), so 2 each; with PXN the sending
// side (the PXN GPU's pool for that source and channel) has 1 sub and 8 slots, and the receive
// side sets the window: channels x 2 chunks (512 KiB), not channels x 8; a lone peer (SendRecv)
// keeps 8 per channel. p2p_window() is the rule.
// Simplified: all peers start at once (NCCL's schedule groups run on different channels at the
// same time); channels per peer only widen the window (one connection per peer pair).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/ring_queue.hpp"

namespace stepsim::collective {

using topology::kNone;

std::int64_t p2p_window(const CollectiveParams& p, int peers_in_batch) {
  const int nsubs = std::clamp(peers_in_batch, 1, kNcclP2pPerBatch);
  return std::int64_t{p.p2p_channels_per_peer} * std::min(p.slots, kNcclSharedSteps / nsubs);
}

P2pScheduleGroups::P2pScheduleGroups(int n, int G)
    : G_(G),
      group_(std::gcd(G, kNcclP2pPerBatch)),
      servers_(static_cast<std::size_t>(ceil_div(n, G))),
      per_server_(static_cast<std::size_t>(ceil_div(G, group_))),
      peers_(static_cast<std::size_t>(n) * servers_ * per_server_, 0) {}

namespace {

class PairwiseRun final : public AlgorithmRun {
 public:
  explicit PairwiseRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

 private:
  // What one GPU sends to one peer.
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
    std::int64_t nvl_queued = 0;  // bytes booked on the source GPU's NVLink, not yet sent
    std::int64_t window = 0;      // pieces in flight at most (p2p_window)
  };
  enum Event : std::uint32_t {
    kNvlink = 1,  // a piece of flow `index` crossed NVLink to its destination
    kPxn,         // flow `index`'s PXN hop is done: post the piece to the NIC
    kPost,        // the proxy posts flow `index`'s next piece to the NIC
    kDeliver,     // the proxy of GPU `index` handled a received message of `piece` bytes
    kNvlSent,     // `piece` wire bytes of flow `index` left its GPU's NVLink egress
  };

  [[nodiscard]] std::int64_t bytes_of(int src, int dst) const;
  [[nodiscard]] std::int64_t chunk_of(const Flow& f) const {
    return f.intra ? core_.params().p2p_nvl_chunk : core_.params().p2p_net_chunk;
  }
  [[nodiscard]] std::int64_t piece_bytes(const Flow& f, std::int64_t i) const {
    const std::int64_t chunk = chunk_of(f);
    return std::clamp<std::int64_t>(f.bytes - i * chunk, 0, chunk);
  }
  // The proxy of GPU `gpu` takes one message from `now`: its thread is busy with it for
  // coll.p2p.proxy_busy, one message after the other; the message is through (on the wire, or
  // handed to the GPU) coll.p2p.proxy_overhead after the thread took it. Returns that time.
  SimTime proxy(std::uint32_t gpu, SimTime now) {
    const CollectiveParams& p = core_.params();
    SimTime& free = proxy_free_[gpu];
    const SimTime start = std::max(free, now);
    free = start + p.p2p_proxy_busy;
    return start + std::max(p.p2p_proxy_overhead, p.p2p_proxy_busy);
  }
  void post(nic::Verbs& v, std::uint32_t flow);
  void add_flow(std::uint32_t src, std::uint32_t dst, std::int64_t bytes,
                std::vector<std::uint32_t>& conn_of);
  // Sends flow `flow`'s next pieces while its window allows, up to `upto` in all.
  void send(nic::Verbs& v, std::uint32_t flow,
            std::int64_t upto = std::numeric_limits<std::int64_t>::max());
  void received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes);

  int n_;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> dst_of_endpoint_;          // receiving side: the destination GPU
  std::vector<RingQueue<std::uint32_t>> posted_flows_;  // side-a endpoint -> posts, in order
  std::vector<std::int64_t> expect_bytes_;              // by GPU
  std::vector<std::int64_t> got_bytes_;                 // by GPU
  std::vector<SimTime> proxy_free_;                     // by GPU: its proxy thread is free from
  std::vector<std::uint32_t> poster_;                   // by flow: the GPU whose NIC posts it
};

PairwiseRun::PairwiseRun(CollectiveCore& core) : AlgorithmRun(core), n_(core.size()) {
  STEPSIM_CHECK(core_.params().p2p_channels_per_peer != CollectiveParams::kP2pAuto &&
                    core_.params().p2p_nvl_chunk != CollectiveParams::kP2pAuto,
                "pairwise: coll.p2p's auto values are resolved before the run (resolve_p2p)");
  const auto G = core_.comm().gpus_per_server;
  expect_bytes_.assign(static_cast<std::size_t>(n_), 0);
  got_bytes_.assign(static_cast<std::size_t>(n_), 0);
  proxy_free_.assign(static_cast<std::size_t>(n_), SimTime::zero());
  // One connection per (source server, destination GPU), shared by the source server's GPUs.
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G));
  std::vector<std::uint32_t> conn_of(static_cast<std::size_t>(servers) * n_, kNone);
  for (int step = 1; step < n_; ++step) {
    for (int g = 0; g < n_; ++g) {
      const auto dst = static_cast<std::uint32_t>((g + step) % n_);  // pairwise order
      const std::int64_t bytes = bytes_of(g, static_cast<int>(dst));
      if (bytes > 0) add_flow(static_cast<std::uint32_t>(g), dst, bytes, conn_of);
    }
  }
  // Each flow's window: network flows by the peers of the source in the same schedule group
  // (source GPU, destination server, destination local index / group size).
  P2pScheduleGroups groups(n_, static_cast<int>(G));
  for (const Flow& f : flows_) {
    if (!f.intra) groups.add(static_cast<int>(f.src), static_cast<int>(f.dst));
  }
  for (Flow& f : flows_) {
    f.window = f.intra ? std::int64_t{core_.params().slots} * core_.params().p2p_channels_per_peer
                       : p2p_window(core_.params(),
                                    groups.peers(static_cast<int>(f.src), static_cast<int>(f.dst)));
  }
  dst_of_endpoint_.assign(core_.connections().size() * 2, kNone);
  posted_flows_.resize(core_.connections().size() * 2);
  for (const Flow& f : flows_) {
    if (!f.intra) dst_of_endpoint_[nic::peer_endpoint(f.endpoint)] = f.dst;
  }
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) {
    if (expect_bytes_[g] == 0) core_.set_gpu_done(g, 0);
  }
}

std::int64_t PairwiseRun::bytes_of(int src, int dst) const {
  // AllToAllv: spec.matrix[src x n + dst]; AllToAll, SendRecv, Send: collective::p2p_bytes (the
  // analytical bound prices the same bytes).
  const CollectiveSpec& spec = core_.spec();
  if (spec.kind == Kind::kAllToAllv) {
    return spec.matrix[static_cast<std::size_t>(src) * static_cast<std::size_t>(n_) +
                       static_cast<std::size_t>(dst)];
  }
  return p2p_bytes(spec.kind, spec.bytes, n_, src, dst);
}

void PairwiseRun::add_flow(std::uint32_t src, std::uint32_t dst, std::int64_t bytes,
                           std::vector<std::uint32_t>& conn_of) {
  const auto G = core_.comm().gpus_per_server;
  Flow f;
  f.src = src;
  f.dst = dst;
  f.bytes = bytes;
  expect_bytes_[dst] += bytes;
  const Gpu& a = core_.gpu(src);
  const Gpu& b = core_.gpu(dst);
  f.intra = a.server == b.server;
  f.pieces = ceil_div(bytes, chunk_of(f));
  // The source server's member on the destination's rail (PXN), or, when the communicator has
  // none there, a member chosen by destination.
  std::uint32_t via = (src / G) * G + dst % G;
  for (std::uint32_t k = (src / G) * G; k < (src / G + 1) * G; ++k) {
    if (core_.gpu(k).local == b.local) via = k;
  }
  if (!f.intra) {
    const std::uint32_t key = (src / G) * static_cast<std::uint32_t>(n_) + dst;
    if (conn_of[key] == kNone) conn_of[key] = core_.add_connection(core_.gpu(via).nic, b.nic);
    f.endpoint = nic::endpoint_of(conn_of[key], 0);
    f.pxn = core_.gpu(via).local != a.local;
  }
  poster_.push_back(f.pxn ? via : src);
  flows_.push_back(f);
}

void PairwiseRun::send(nic::Verbs& v, std::uint32_t fi, std::int64_t upto) {
  Flow& f = flows_[fi];
  const CollectiveParams& p = core_.params();
  // A flow over NVLink (to a peer in the server, or its PXN hop) has at most one NVLink chunk
  // of bytes waiting on the GPU's NVLink egress at a time (a copy's thread block has its piece
  // on the link; the GPU's flows share it byte for byte), so one flow's window of pieces does
  // not queue ahead of the others': intra-server pieces would starve the PXN hops feeding the
  // NIC.
  while (f.sent < std::min(f.pieces, upto) && f.sent - f.acked < f.window &&
         (!(f.intra || f.pxn) || f.nvl_queued < p.p2p_nvl_chunk)) {
    const std::int64_t wire = core_.wire_bytes(piece_bytes(f, f.sent));
    ++f.sent;
    if (f.intra || f.pxn) {
      const SimTime arrive = core_.nvlink_hop(f.src, v.now(), wire);
      f.nvl_queued += wire;
      core_.schedule(v, arrive - p.nvlink_latency - v.now(),
                     TimerPayload{.event = kNvlSent, .index = fi, .piece = wire});
      if (f.intra) {
        core_.schedule(v, arrive - v.now() + p.hop_overhead(true),
                       TimerPayload{.event = kNvlink, .index = fi});
      } else {
        core_.schedule(v, arrive - v.now(), TimerPayload{.event = kPxn, .index = fi});
      }
    } else {
      core_.schedule(v, proxy(f.src, v.now()) - v.now(), TimerPayload{.event = kPost, .index = fi});
    }
  }
}

void PairwiseRun::post(nic::Verbs& v, std::uint32_t fi) {
  // The endpoint's queue takes the posts in the order they happen, which is the order of their
  // send completions.
  Flow& f = flows_[fi];
  posted_flows_[f.endpoint].push(fi);
  core_.post_network(v, f.src, f.endpoint, core_.wire_bytes(piece_bytes(f, f.pxn_posted++)));
}

void PairwiseRun::received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes) {
  got_bytes_[gpu] += bytes;
  if (got_bytes_[gpu] >= expect_bytes_[gpu] && !core_.gpu_done(gpu)) {
    core_.set_gpu_done(gpu, v.now().picoseconds());
  }
}

void PairwiseRun::start(nic::Verbs& v) {
  // Round robin over the peers, one piece each in turn, as NCCL's proxy progresses its ops: a
  // GPU's first pieces go to all of its peers, not a window's worth to the first peer.
  const CollectiveParams& p = core_.params();
  for (std::int64_t k = 1; k <= std::int64_t{p.slots} * p.p2p_channels_per_peer; ++k) {
    // (a flow's own window stops it earlier: send() checks it)
    for (std::uint32_t fi = 0; fi < flows_.size(); ++fi) {
      if (core_.local(v, flows_[fi].src)) send(v, fi, k);
    }
  }
}

void PairwiseRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  Flow& f = flows_[t.index];
  switch (t.event) {
    case kNvlink:
      ++f.acked;
      received(v, f.dst, piece_bytes(f, f.acked - 1));
      send(v, t.index);
      break;
    case kPxn:
      // The PXN GPU's proxy posts it.
      core_.schedule(v, proxy(poster_[t.index], v.now()) - v.now(),
                     TimerPayload{.event = kPost, .index = t.index});
      break;
    case kPost:
      post(v, t.index);
      break;
    case kDeliver:
      received(v, t.index, t.piece);
      break;
    case kNvlSent:
      f.nvl_queued -= t.piece;
      send(v, t.index);
      break;
    default:
      fatal("collective: pairwise: unknown timer event " + std::to_string(t.event));
  }
}

void PairwiseRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  if (c.recv) {
    const auto payload = static_cast<std::int64_t>(
        static_cast<double>(c.bytes) / core_.params().wire_factor() + 0.5);
    const std::uint32_t dst = dst_of_endpoint_[endpoint];
    core_.schedule(v, proxy(dst, v.now()) - v.now(),
                   TimerPayload{.event = kDeliver, .index = dst, .piece = payload});
  } else {
    // Send completions come in posting order: credit the flow that posted first.
    const std::uint32_t fi = posted_flows_[endpoint].pop();
    ++flows_[fi].acked;
    send(v, fi);
  }
}

class Pairwise final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "pairwise"; }
  [[nodiscard]] std::string selected_by() const override { return "ring"; }
  [[nodiscard]] std::string description() const override {
    return "AllToAll, AllToAllv, SendRecv, Send: every GPU sends each peer its bytes in NCCL's "
           "pairwise order, over NVLink or the destination's rail (PXN)";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllToAll, Kind::kAllToAllv, Kind::kSendRecv, Kind::kSend};
    s.tuned = true;
    return s;
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    TunerCost c = ring_tuner_cost(s, r);
    if (s.kind != Kind::kAllToAll || s.servers < 2 || s.bytes <= 0) return c;
    // AllToAll between servers, per GPU and its NIC (one per GPU): (n-G)/n S over the NIC,
    // (G-1)/G S over NVLink (its NVLink peers and PXN hops), 2 (n-G) messages of at most one
    // chunk per peer through its proxy (its busy time each); the slowest sets the pace.
    const double n = s.gpus;
    const double G = s.gpus_per_server;
    const double S = static_cast<double>(s.bytes);
    const double t = std::max({(n - G) / n * S / r.nic, (G - 1) / G * S / r.nvlink,
                               2 * (n - G) * std::ceil(S / n / r.p2p_net_chunk) * r.p2p_proxy_s});
    if (t > 0) c.bandwidth = busbw_factor(s.kind, s.gpus) * S / t;
    // Every peer at once: one network step of latency (as its bound chain), not a ring's n-1.
    c.steps_intra = 0;
    c.steps_inter = 1;
    return c;
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    // One hop; a network piece counts at its completion, with no protocol overhead.
    const bool net = s.servers > 1;
    return BoundChain{net ? 1.0 : 0.0, net ? 0.0 : 1.0, false};
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<PairwiseRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kPairwiseRegistration{[] { return std::make_unique<Pairwise>(); }, 30};

}  // namespace stepsim::collective
