// NVLS-tree AllReduce over whole servers (NCCL 2.18+, NCCL_ALGO=NVLSTree; all_reduce.h and
// transport/nvls.cc connectNvls): NVLink SHARP inside each server, NCCL's double binary tree
// between servers. A channel's data is split among the server's NVLS heads (one GPU per NIC);
// the share of head h: the switch reduces every GPU's copy of a piece into head h (multimem
// ld_reduce), head h reduces it with its tree children's pieces (from the network), sends it up,
// gets the result down from its parent (or turns it around at the root), forwards it to its
// children and stores it once, which the NVSwitch multicasts to every GPU of the server.
// Channels alternate between tree 0 and tree 1 of NCCL's double binary tree (graph/trees.cc,
// double_binary_tree.hpp), as connectNvls does.
// Per GPU: NVLink carries S (its copy of every piece) + S / heads (its multicasts, if a head);
// per head's NIC, 2(m-1)/m x S / heads on average over m servers (each tree edge once up and
// once down), at most 2 S / heads (an inner node in one tree, a leaf in the other). Simplified:
// NVLS runs at gpu.nvls_efficiency of the copy rate on one timeline per GPU (as
// nvls_algorithm.cpp); a reduced piece waits for the last GPU's copy.
#include <algorithm>
#include <cmath>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "src/collective/double_binary_tree.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

using topology::kNone;

namespace {

class NvlsTreeRun final : public AlgorithmRun {
 public:
  explicit NvlsTreeRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

 private:
  // Edges 0 and 1: network children (`recvd`: pieces reduced up from it; `sent`: broadcast down);
  // edge 2: the parent (`sent`: pieces up; `recvd`: pieces that came down).
  struct Edge {
    std::uint32_t peer = kNone;
    std::uint32_t endpoint = 0;
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t arrived = 0;
    std::int64_t recvd = 0;
  };
  // One per (server, channel, head).
  struct Node {
    std::uint32_t server = 0;
    std::uint32_t gpu = 0;  // the head
    int children = 0;
    Edge edge[3];
    std::int64_t issued = 0;  // pieces whose NVLS reduce was started
    std::int64_t local = 0;   // pieces reduced inside the server, at the head
    std::int64_t mc = 0;      // pieces stored for the multicast
    bool done = false;
  };
  static constexpr std::uint32_t kUp = 2;
  enum Event : std::uint32_t {
    kLocal = 1,  // node `index`'s next piece is reduced inside the server
    kRecv,       // a network piece at (node `index`, edge `edge`) counts as received
    kMc,         // node `index`'s next multicast piece reached every GPU of the server
  };

  [[nodiscard]] std::int64_t piece_bytes(std::int64_t i) const {
    return std::clamp<std::int64_t>(share_ - i * chunk_, 0, chunk_);
  }
  [[nodiscard]] std::uint32_t node_of(std::uint32_t server, int c, std::uint32_t h) const {
    return (server * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c)) *
               heads_ +
           h;
  }
  void link(std::uint32_t child, std::uint32_t parent);
  void issue(nic::Verbs& v, std::uint32_t node);
  void progress(nic::Verbs& v, std::uint32_t node);
  void part(nic::Verbs& v, std::uint32_t gpu);

  int n_;
  std::uint32_t G_ = 1;
  std::uint32_t servers_ = 1;
  std::uint32_t heads_ = 1;
  int channels_ = 2;
  std::int64_t share_ = 0;  // bytes per (channel, head)
  std::int64_t chunk_ = 0;
  std::int64_t pieces_ = 1;
  std::vector<std::uint32_t> head_local_;  // by head: its GPU's index in the server
  std::vector<Node> nodes_;
  std::vector<std::int64_t> parts_left_;  // by GPU: multicast pieces + nodes it heads
  struct EdgeRef {
    std::uint32_t node = kNone;
    std::uint32_t edge = 0;
  };
  std::vector<EdgeRef> edge_of_endpoint_;
};

NvlsTreeRun::NvlsTreeRun(CollectiveCore& core) : AlgorithmRun(core), n_(core.size()) {
  const CollectiveParams& p = core_.params();
  G_ = core_.comm().gpus_per_server;
  STEPSIM_CHECK(n_ % static_cast<int>(G_) == 0 && n_ > static_cast<int>(G_),
                "NVLS-tree runs over whole servers, at least two");
  servers_ = static_cast<std::uint32_t>(n_) / G_;
  // NVLS across servers, as nvls_sharp: no faster than one server's NVLS busbw (NCCL's tuning.cc).
  core_.set_nvlink_rate(DataRate::bps(static_cast<std::int64_t>(
      static_cast<double>(p.nvlink_payload().bits_per_second()) * p.nvls_efficiency *
      nvls_across_servers_scale(static_cast<int>(G_), n_))));
  // The NVLS heads: the first GPU of the server on each of its NICs (NCCL: one head per NIC).
  std::vector<topology::PortId> nics;
  for (std::uint32_t k = 0; k < G_; ++k) {
    const topology::PortId nic = core_.gpu(k).nic;
    if (std::find(nics.begin(), nics.end(), nic) == nics.end()) {
      nics.push_back(nic);
      head_local_.push_back(k);
    }
  }
  heads_ = static_cast<std::uint32_t>(head_local_.size());
  // Channels in pairs (tree 0, tree 1), at least 64 KiB per channel as the tree.
  channels_ = 2 * core_.channels_for_size(/*per_gpu=*/false);
  share_ = ceil_div(ceil_div(std::max<std::int64_t>(core_.spec().bytes, 0), channels_), heads_);
  // NCCL's chunk for NVLS_TREE (transport/nvls.cc, Hopper): the NVLS chunk (128 KiB), at most
  // 64 KiB from 4 servers; then enqueue.cc's: smaller chunks while a (channel, head) share holds
  // fewer than 32, 16, 4, 1 of them, down to 256, 128, 64, 32 KiB, so the tree's pipeline fills.
  chunk_ = servers_ >= 4 ? std::min<std::int64_t>(p.nvls_chunk, 64 << 10) : p.nvls_chunk;
  const std::int64_t ops = std::int64_t{channels_} * heads_;
  const std::int64_t bytes = std::max<std::int64_t>(core_.spec().bytes, 0);
  for (const auto& [times, size] : {std::pair<std::int64_t, std::int64_t>{32, 256 << 10},
                                    {16, 128 << 10},
                                    {4, 64 << 10},
                                    {1, 32 << 10}}) {
    if (bytes < times * ops * chunk_ && chunk_ > size) chunk_ = size;
  }
  pieces_ = std::max<std::int64_t>(1, ceil_div(share_, chunk_));
  nodes_.resize(static_cast<std::size_t>(servers_) * channels_ * heads_);
  parts_left_.assign(static_cast<std::size_t>(n_),
                     static_cast<std::int64_t>(channels_) * heads_ * pieces_);
  for (std::uint32_t s = 0; s < servers_; ++s) {
    for (int c = 0; c < channels_; ++c) {
      for (std::uint32_t h = 0; h < heads_; ++h) {
        Node& nd = nodes_[node_of(s, c, h)];
        nd.server = s;
        nd.gpu = s * G_ + head_local_[h];
        ++parts_left_[nd.gpu];
      }
    }
  }
  for (int c = 0; c < channels_; ++c) {
    for (std::uint32_t child = 0; child < servers_; ++child) {
      const std::uint32_t parent = dtree_parent(servers_, child, c % 2);
      if (parent == kNone) continue;
      for (std::uint32_t h = 0; h < heads_; ++h) link(node_of(child, c, h), node_of(parent, c, h));
    }
  }
  edge_of_endpoint_.assign(core_.connections().size() * 2, EdgeRef{});
  for (std::uint32_t t = 0; t < nodes_.size(); ++t) {
    for (std::uint32_t k = 0; k < 3; ++k) {
      const Edge& e = nodes_[t].edge[k];
      if (e.peer != kNone) edge_of_endpoint_[e.endpoint] = EdgeRef{t, k};
    }
  }
}

void NvlsTreeRun::link(std::uint32_t child, std::uint32_t parent) {
  Node& ch = nodes_[child];
  Node& pa = nodes_[parent];
  const auto k = static_cast<std::uint32_t>(pa.children++);
  STEPSIM_CHECK(k < 2, "an NVLS-tree node with more than two children");
  const std::uint32_t ci = core_.add_connection(core_.gpu(ch.gpu).nic, core_.gpu(pa.gpu).nic);
  ch.edge[kUp].peer = parent;
  ch.edge[kUp].endpoint = nic::endpoint_of(ci, 0);  // the child posts up on side a
  pa.edge[k].peer = child;
  pa.edge[k].endpoint = nic::endpoint_of(ci, 1);  // the parent posts down on side b
}

void NvlsTreeRun::issue(nic::Verbs& v, std::uint32_t t) {
  // The NVLS reduce of the next pieces: every GPU of the server sends its copy to the switch,
  // which hands the sum to the head. At most coll.slots pieces wait in the head's buffer (until
  // sent up and acknowledged, or at the root until reduced with the children's).
  Node& nd = nodes_[t];
  const CollectiveParams& p = core_.params();
  const bool root = nd.edge[kUp].peer == kNone;
  const std::int64_t freed = root ? nd.edge[kUp].sent : nd.edge[kUp].acked;
  while (nd.issued < pieces_ && nd.issued < freed + p.slots) {
    const std::int64_t bytes = piece_bytes(nd.issued);
    SimTime in = v.now();
    for (std::uint32_t k = 0; k < G_; ++k) {
      in = std::max(in, core_.nvlink_hop(nd.server * G_ + k, v.now(), core_.wire_bytes(bytes)));
    }
    const SimTime ready = in + p.reduce_rate.serialization_time(Bytes(bytes * G_)) +
                          p.nvlink_latency + p.nvls_overhead / 2;
    core_.schedule(v, ready - v.now(), TimerPayload{.event = kLocal, .index = t});
    ++nd.issued;
  }
}

void NvlsTreeRun::progress(nic::Verbs& v, std::uint32_t t) {
  Node& nd = nodes_[t];
  const int slots = core_.params().slots;
  std::int64_t reduced = nd.local;
  for (int k = 0; k < nd.children; ++k) reduced = std::min(reduced, nd.edge[k].recvd);
  Edge& up = nd.edge[kUp];
  const bool root = up.peer == kNone;
  if (root) up.sent = reduced;  // the root turns its reduced pieces around
  while (!root && up.sent < reduced && up.sent - up.acked < slots) {
    core_.post_network(v, nd.gpu, up.endpoint, core_.wire_bytes(piece_bytes(up.sent)));
    ++up.sent;
  }
  const std::int64_t down = root ? reduced : up.recvd;
  for (int k = 0; k < nd.children; ++k) {
    Edge& e = nd.edge[k];
    while (e.sent < down && e.sent - e.acked < slots) {
      core_.post_network(v, nd.gpu, e.endpoint, core_.wire_bytes(piece_bytes(e.sent)));
      ++e.sent;
    }
  }
  // The head stores each final piece once; the NVSwitch multicasts it to the server's GPUs.
  while (nd.mc < down) {
    const SimTime at = core_.nvlink_hop(nd.gpu, v.now(), core_.wire_bytes(piece_bytes(nd.mc))) +
                       core_.params().nvls_overhead / 2;
    core_.schedule(v, at - v.now(), TimerPayload{.event = kMc, .index = t});
    ++nd.mc;
  }
  issue(v, t);
  bool done = down == pieces_ && (root || up.acked == pieces_);
  for (int k = 0; k < nd.children && done; ++k) done = nd.edge[k].acked == pieces_;
  if (done && !nd.done) {
    nd.done = true;
    part(v, nd.gpu);
  }
}

void NvlsTreeRun::part(nic::Verbs& v, std::uint32_t gpu) {
  if (--parts_left_[gpu] == 0) core_.set_gpu_done(gpu, v.now().picoseconds());
}

void NvlsTreeRun::start(nic::Verbs& v) {
  for (std::uint32_t t = 0; t < nodes_.size(); ++t) {
    if (core_.local(v, nodes_[t].gpu)) progress(v, t);
  }
}

void NvlsTreeRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  Node& nd = nodes_[t.index];
  switch (t.event) {
    case kLocal:
      ++nd.local;
      progress(v, t.index);
      break;
    case kRecv:
      ++nd.edge[t.edge].recvd;
      progress(v, t.index);
      break;
    case kMc:
      for (std::uint32_t k = 0; k < G_; ++k) part(v, nd.server * G_ + k);
      break;
    default:
      fatal("collective: nvls_tree: unknown timer event " + std::to_string(t.event));
  }
}

void NvlsTreeRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  const EdgeRef ref = edge_of_endpoint_[endpoint];
  Edge& e = nodes_[ref.node].edge[ref.edge];
  if (c.recv) {
    // Up from a child: reduced, then counted; down from the parent: counted after the overhead.
    const std::int64_t i = e.arrived++;
    const CollectiveParams& p = core_.params();
    SimTime delay = p.nvls_tree_net_overhead;
    if (ref.edge != kUp) delay += p.reduce_rate.serialization_time(Bytes(piece_bytes(i)));
    core_.schedule(v, delay, TimerPayload{.event = kRecv, .index = ref.node, .edge = ref.edge});
  } else {
    ++e.acked;
    progress(v, ref.node);
  }
}

class NvlsTree final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "nvls_tree"; }
  [[nodiscard]] std::string description() const override {
    return "AllReduce over whole servers: NVLink SHARP inside each server, NCCL's double binary "
           "tree between them (NVLSTree)";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllReduce};
    s.servers = Servers::kSeveral;
    s.needs_nvls = true;
    s.min_gpus_per_server = kNvlsMinGpus;
    s.protocols = {Protocol::kSimple};  // NCCL runs NVLS algorithms with Simple only
    s.tuned = true;
    s.tuned_min_gpus_per_server = kNvlsTunedMinGpus;
    return s;
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    // NVLink: (G+1)/G S per GPU at the NVLS rate; a head's NIC: S/G on two servers (each is the
    // root of one tree), 2 S/G beyond (inner in one tree, leaf in the other). NCCL's tuning.cc:
    // min(bwIntra, nNodes <= 2 ? bwInter : bwInter / 2). Latency: NCCL's intraLat + 2 log2(m)
    // x interLat with NVLS-tree's own step latencies (25 us, 20.9 us; the run's overheads plus
    // the transport).
    const int G = s.gpus_per_server;
    const double nv =
        (G + 1.0) / G / (r.nvlink * r.nvls_efficiency * nvls_across_servers_scale(G, s.gpus));
    const double net = (s.servers <= 2 ? 1.0 : 2.0) / G / r.nic;
    const double depth = std::ceil(std::log2(s.servers));
    constexpr double kNvlinkTransport = 0.5e-6;  // the run's NVLink and NIC-to-NIC latencies
    constexpr double kNetTransport = 2.5e-6;
    TunerCost c{0, 0, busbw_factor(s.kind, s.gpus) / std::max(nv, net)};
    c.latency =
        kNvlinkTransport + r.nvls_overhead_s + 2 * depth * (kNetTransport + r.nvls_tree_net_s);
    return c;
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& /*s*/) const override {
    return std::nullopt;  // moves less than a ring or tree
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<NvlsTreeRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kNvlsTreeRegistration{[] { return std::make_unique<NvlsTree>(); }, 60};

}  // namespace stepsim::collective
