// NCCL's double binary tree AllReduce (Sanders, Speck, Träff, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan", 2009; NCCL 2.4). As NCCL, every channel is a pair: tree
// 0 and tree 1 of NCCL's double binary tree over the servers (double_binary_tree.hpp: the second
// mirrors or shifts the first, so every server is a leaf in one of them and each NIC carries at
// most 2 S / G), on rail r = channel pair mod GPUs per server. Inside a server the GPUs form a
// chain from GPU r, whose head joins the server tree. Pieces go up (reduced at every node once all
// its children's pieces are in) and, from the root, down. A node has at most 3 children (two
// servers and its chain's next GPU).
#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "src/collective/double_binary_tree.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

using topology::kNone;

namespace {

class TreeRun final : public AlgorithmRun {
 public:
  explicit TreeRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

 private:
  // One node per GPU and channel; edge 3 is the parent, edges 0..2 the children. On a child
  // edge, `recvd` counts pieces reduced up from that child and `sent` pieces broadcast down to
  // it; on the parent edge, `sent` counts pieces sent up and `recvd` pieces that came down.
  struct Edge {
    std::uint32_t peer = kNone;   // tree node at the other end
    std::uint32_t peer_slot = 0;  // this edge's slot at the peer
    bool intra = false;
    std::uint32_t endpoint = 0;  // network: the endpoint this node posts on
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t arrived = 0;
    std::int64_t recvd = 0;
    bool on_nvlink = false;  // intra: a piece of this edge is on the sender's NVLink
  };
  struct Node {
    std::uint32_t gpu = 0;
    int children = 0;
    Edge edge[4];  // 0..2 children, 3 parent
    std::int64_t done_ps = -1;
  };
  struct EdgeRef {
    std::uint32_t node = 0;
    std::uint32_t edge = 0;
  };
  static constexpr std::uint32_t kUp = 3;
  enum Event : std::uint32_t {
    kArrive = 1,  // a piece crossed NVLink into (node `index`, edge `edge`)
    kRecv,        // a piece at (node `index`, edge `edge`) counts as received
  };

  [[nodiscard]] std::int64_t piece_bytes(std::int64_t i) const {
    return std::clamp<std::int64_t>(channel_bytes_ - i * chunk_, 0, chunk_);
  }
  [[nodiscard]] std::uint32_t node_of(std::uint32_t gpu, int c) const {
    return gpu * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
  }
  void build_channel(int c, std::uint32_t servers);
  void link(std::uint32_t child, std::uint32_t parent);
  void progress(nic::Verbs& v, std::uint32_t node);
  void transfer(nic::Verbs& v, std::uint32_t node, std::uint32_t slot, std::int64_t i);
  void arrived(nic::Verbs& v, std::uint32_t node, std::uint32_t slot);

  int n_;
  int channels_ = 1;
  std::int64_t channel_bytes_ = 0;
  std::int64_t chunk_ = 0;   // bytes per piece (coll.chunk, smaller in deep trees as NCCL)
  std::int64_t pieces_ = 1;  // per channel
  std::uint32_t G_ = 1;      // GPUs per server in the communicator
  std::vector<Node> tree_;
  std::vector<EdgeRef> edge_of_endpoint_;
};

TreeRun::TreeRun(CollectiveCore& core) : AlgorithmRun(core), n_(core.size()) {
  // Every node handles all of its channel's bytes (no split among the GPUs as in the ring), so
  // the channel count does not shrink with the communicator (NCCL: only ring/LL's per-thread
  // threshold grows with the rank count, enqueue.cc and tuning.cc).
  // NCCL pairs the channels: channel c runs tree 0 and its twin c + channels runs tree 1 on the
  // same NIC, so every NIC carries both trees (inner node in one, mostly a leaf in the other).
  channels_ = 2 * core_.channels_for_size(/*per_gpu=*/false);
  channel_bytes_ = ceil_div(std::max<std::int64_t>(core_.spec().bytes, 0), channels_);
  G_ = std::min<std::uint32_t>(core_.comm().gpus_per_server, static_cast<std::uint32_t>(n_));
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G_));
  chunk_ = core_.params().chunk;
  if (parse_protocol(core_.params().protocol).value() == Protocol::kSimple) {
    // NCCL (enqueue.cc, tree up/down with Simple) halves the chunk while a channel has fewer
    // than 8, 4, 1 chunks per level of the tree's depth, down to 128, 64, 32 KiB: a deep tree's
    // pipeline fills in depth x (chunk time + hop latency), so it needs more, smaller pieces.
    const std::int64_t depth = (G_ - 1) + static_cast<std::int64_t>(std::bit_width(servers) - 1);
    const auto shrink = [&](std::int64_t per_level, std::int64_t floor) {
      while (channel_bytes_ / chunk_ < depth * per_level && chunk_ > floor) chunk_ /= 2;
    };
    shrink(8, 128 << 10);
    shrink(4, 64 << 10);
    shrink(1, 32 << 10);
  }
  pieces_ = std::max<std::int64_t>(1, ceil_div(channel_bytes_, chunk_));
  tree_.resize(static_cast<std::size_t>(n_) * static_cast<std::size_t>(channels_));
  for (int c = 0; c < channels_; ++c) build_channel(c, servers);
  edge_of_endpoint_.assign(core_.connections().size() * 2, EdgeRef{kNone, 0});
  for (std::uint32_t t = 0; t < tree_.size(); ++t) {
    for (std::uint32_t k = 0; k < 4; ++k) {
      const Edge& e = tree_[t].edge[k];
      if (e.peer != kNone && !e.intra) edge_of_endpoint_[e.endpoint] = EdgeRef{t, k};
    }
  }
  if (n_ == 1) {
    tree_[0].done_ps = 0;
    core_.set_gpu_done(0, 0);
  }
}

void TreeRun::build_channel(int c, std::uint32_t servers) {
  const std::uint32_t r = core_.rail_member(c / 2) % G_;
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) tree_[node_of(g, c)].gpu = g;
  for (std::uint32_t s = 0; s < servers; ++s) {
    // The server's chain: r, r + 1, ... (mod G); each GPU's parent is the one before it.
    for (std::uint32_t j = 1; j < G_; ++j) {
      link(node_of(s * G_ + (r + j) % G_, c), node_of(s * G_ + (r + j - 1) % G_, c));
    }
  }
  // Channel c runs tree c mod 2 of the pair between the chains' heads.
  for (std::uint32_t s = 0; s < servers; ++s) {
    const std::uint32_t parent = dtree_parent(servers, s, c % 2);
    if (parent != kNone) link(node_of(s * G_ + r, c), node_of(parent * G_ + r, c));
  }
}

void TreeRun::link(std::uint32_t child, std::uint32_t parent) {
  Node& ch = tree_[child];
  Node& pa = tree_[parent];
  const auto k = static_cast<std::uint32_t>(pa.children++);
  STEPSIM_CHECK(k < 3, "a tree node with more than three children");
  const Gpu& a = core_.gpu(ch.gpu);
  const Gpu& b = core_.gpu(pa.gpu);
  Edge& up = ch.edge[kUp];
  Edge& down = pa.edge[k];
  up.peer = parent;
  up.peer_slot = k;
  down.peer = child;
  down.peer_slot = kUp;
  up.intra = down.intra = a.server == b.server;
  if (!up.intra) {
    const std::uint32_t ci = core_.add_connection(a.nic, b.nic);
    up.endpoint = nic::endpoint_of(ci, 0);    // the child posts up on side a
    down.endpoint = nic::endpoint_of(ci, 1);  // the parent posts down on side b
  }
}

void TreeRun::transfer(nic::Verbs& v, std::uint32_t t, std::uint32_t slot, std::int64_t i) {
  Edge& e = tree_[t].edge[slot];
  const std::int64_t wire = core_.wire_bytes(piece_bytes(i));
  ++e.sent;
  const std::uint32_t gpu = tree_[t].gpu;
  if (e.intra) {
    e.on_nvlink = true;
    const SimTime arrive = core_.nvlink_hop(gpu, v.now(), wire);
    core_.schedule(v, arrive - v.now(),
                   TimerPayload{.event = kArrive, .index = e.peer, .edge = e.peer_slot});
  } else {
    core_.post_network(v, gpu, e.endpoint, wire);
  }
}

void TreeRun::arrived(nic::Verbs& v, std::uint32_t t, std::uint32_t slot) {
  // Up from a child: reduced, then counted; down from the parent: counted after the overhead.
  Edge& e = tree_[t].edge[slot];
  const std::int64_t i = e.arrived++;
  const CollectiveParams& p = core_.params();
  SimTime delay = p.hop_overhead(e.intra);
  if (slot != kUp) delay += p.reduce_rate.serialization_time(Bytes(piece_bytes(i)));
  core_.schedule(v, delay, TimerPayload{.event = kRecv, .index = t, .edge = slot});
}

void TreeRun::progress(nic::Verbs& v, std::uint32_t t) {
  Node& nd = tree_[t];
  const std::int64_t m = pieces_;
  const int slots = core_.params().slots;
  // Pieces reduced here: every child's part has come up (a leaf has all of them).
  std::int64_t reduced = m;
  for (int k = 0; k < nd.children; ++k) reduced = std::min(reduced, nd.edge[k].recvd);
  Edge& up = nd.edge[kUp];
  const bool root = up.peer == kNone;
  while (!root && up.sent < reduced && up.sent - up.acked < slots && !up.on_nvlink) {
    transfer(v, t, kUp, up.sent);
  }
  // Pieces that may go down: the root's reduced ones, or those that came down from the parent.
  const std::int64_t down = root ? reduced : up.recvd;
  for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(nd.children); ++k) {
    Edge& e = nd.edge[k];
    while (e.sent < down && e.sent - e.acked < slots && !e.on_nvlink) transfer(v, t, k, e.sent);
  }
  bool done = down == m && (root || up.acked == m);
  for (int k = 0; k < nd.children && done; ++k) done = nd.edge[k].acked == m;
  if (done && nd.done_ps < 0) {
    nd.done_ps = v.now().picoseconds();
    core_.part_done(nd.gpu, nd.done_ps, channels_);
  }
}

void TreeRun::start(nic::Verbs& v) {
  for (std::uint32_t t = 0; t < tree_.size(); ++t) {
    if (core_.local(v, tree_[t].gpu)) progress(v, t);
  }
}

void TreeRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  switch (t.event) {
    case kArrive: {
      // The sender's slot frees once the piece is in this GPU's buffer.
      const Edge& e = tree_[t.index].edge[t.edge];
      Edge& from = tree_[e.peer].edge[e.peer_slot];
      ++from.acked;
      from.on_nvlink = false;
      arrived(v, t.index, t.edge);
      progress(v, e.peer);
      break;
    }
    case kRecv:
      ++tree_[t.index].edge[t.edge].recvd;
      progress(v, t.index);
      break;
    default:
      fatal("collective: tree: unknown timer event " + std::to_string(t.event));
  }
}

void TreeRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  const EdgeRef ref = edge_of_endpoint_[endpoint];
  if (c.recv) {
    arrived(v, ref.node, ref.edge);
  } else {
    ++tree_[ref.node].edge[ref.edge].acked;
    progress(v, ref.node);
  }
}

class Tree final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "tree"; }
  [[nodiscard]] std::string description() const override {
    return "AllReduce: NCCL's double binary tree over the servers, a chain inside each";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllReduce};
    s.tuned = true;
    s.tuned_min_gpus = 2;
    return s;
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    // Up and down: the server tree's depth between servers, the chain inside. Bandwidth as
    // NCCL's tuning.cc: the tree's bus bandwidth is 0.92 of the graph's (the ring's), and its
    // algorithm bandwidth half of that (the ring's: n / 2(n-1)); in busbw terms (the tuner divides
    // busbw_factor x S by it), 0.92 x (n-1)/n of the ring's.
    const double depth = s.servers > 1 ? std::ceil(std::log2(s.servers)) : 0;
    const double tree_factor = s.gpus > 1 ? 0.92 * (s.gpus - 1) / s.gpus : 0.92;
    return TunerCost{2.0 * (s.gpus_per_server - 1), 2 * depth, ring_bandwidth(s, r) * tree_factor};
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    const double depth = s.servers > 1 ? std::ceil(std::log2(s.servers)) : 0;
    return BoundChain{2 * depth, 2.0 * (s.gpus_per_server - 1), true};
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<TreeRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kTreeRegistration{[] { return std::make_unique<Tree>(); }, 40};

}  // namespace stepsim::collective
