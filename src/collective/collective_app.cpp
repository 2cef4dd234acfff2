// One collective as an RDMA application (see collective_app.hpp). Modelling choices:
// - A piece's progress is counted, not named: pieces of one ring edge arrive in order (one QP,
//   or one NVLink timeline), so "piece i - dep has arrived" is "arrived count > i - dep".
// - The protocol's per-hop overhead and the reduction are a delay between a piece's arrival and
//   the moment it counts as received (and may be forwarded); they cost latency, not bandwidth.
// - NVLink is a per-GPU egress timeline (bandwidth per direction) plus a latency; the NVSwitch
//   is not a bottleneck.
#include "stepsim/collective/collective_app.hpp"

#include <memory>

#include "stepsim/collective/sharp.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/nic/rdma_host.hpp"

namespace stepsim::collective {

using topology::kNone;

namespace {

constexpr std::int64_t kSource = std::numeric_limits<std::int64_t>::max() / 4;
// Timer tags: the kind in the top 4 bits, a lane or flow index below.
enum Tag : std::uint32_t {
  kTagStart = 0,
  kTagNvlink = 1u << 28,  // a piece crossed NVLink into lane (low bits)
  kTagRecv = 2u << 28,    // a network piece of lane (low bits) counts as received
  kTagPxn = 3u << 28,     // lane's (low bits) PXN hop done: post the piece to the NIC
  kTagA2aNvlink = 4u << 28,
  kTagA2aPxn = 5u << 28,
  kTagTreeArrive = 6u << 28,  // a tree piece crossed NVLink into (node << 2 | slot)
  kTagTreeRecv = 7u << 28,    // a tree piece at (node << 2 | slot) counts as received
  kTagNvlsIn = 8u << 28,      // NVLS: a GPU's contributions to (channel, piece) reached the switch
  kTagNvlsOut = 9u << 28,     // NVLS: GPU's reduced piece (channel, piece) is back: multicast it
  kTagNvlsMc = 10u << 28,     // NVLS: a multicast piece reached GPU (low bits)
};
constexpr std::uint32_t kTagMask = 0xf0000000u;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

double CollectiveResult::algbw_gbs(std::int64_t bytes) const {
  return time_ps > 0 ? static_cast<double>(bytes) / (static_cast<double>(time_ps) * 1e-12) / 1e9
                     : 0.0;
}

CollectiveApp::CollectiveApp(const Communicator& comm, CollectiveSpec spec,
                             const CollectiveParams& params)
    : comm_(comm), spec_(spec), p_(params), n_(comm.size()) {
  STEPSIM_CHECK(n_ >= 1 && p_.validate().ok(), "invalid collective");
  nvlink_rate_ = p_.nvlink_payload();
  if (p_.algorithm == "nvls") {
    nvlink_rate_ = DataRate::bps(static_cast<std::int64_t>(
        static_cast<double>(nvlink_rate_.bits_per_second()) * p_.nvls_efficiency));
  }
  nvlink_free_.assign(static_cast<std::size_t>(n_), SimTime::zero());
  lanes_done_.assign(static_cast<std::size_t>(n_), 0);
  gpu_done_ps_.assign(static_cast<std::size_t>(n_), -1);
  nvlink_bytes_.assign(static_cast<std::size_t>(n_), 0);
  network_bytes_.assign(static_cast<std::size_t>(n_), 0);
  // Servers in communicator order (GPU g is on server g / GPUs per server).
  topology::NodeId top = 0;
  for (const Gpu& g : comm_.gpus) top = std::max(top, g.server);
  server_rank_of_node_.assign(top + 1, topology::kNone);
  for (int g = 0; g < n_; ++g) {
    server_rank_of_node_[comm_.gpus[static_cast<std::size_t>(g)].server] =
        static_cast<std::uint32_t>(g) / comm_.gpus_per_server;
  }
  fct_.resize(static_cast<std::size_t>(ceil_div(n_, comm_.gpus_per_server)));
  if (point_to_point()) {
    build_alltoall();
  } else if (p_.algorithm == "nvls") {
    STEPSIM_CHECK(spec_.kind == Kind::kAllReduce, "NVLS is for AllReduce");
    nvls_ = true;
    channels_ = static_cast<int>(
        std::clamp<std::int64_t>(spec_.bytes / (std::int64_t{n_} * 65536), 1, p_.channels));
    channel_bytes_ = ceil_div(std::max<std::int64_t>(spec_.bytes, 0), channels_);
    seg_ = ceil_div(channel_bytes_, n_);  // each GPU's shard of a channel
    pieces_per_step_ = std::max<std::int64_t>(1, ceil_div(seg_, p_.chunk));
    nvls_in_.assign(static_cast<std::size_t>(channels_ * pieces_per_step_), 0);
    nvls_got_.assign(static_cast<std::size_t>(n_), 0);
  } else if (p_.algorithm == "sharp") {
    STEPSIM_CHECK(spec_.kind == Kind::kAllReduce && n_ % comm_.gpus_per_server == 0,
                  "SHARP is for AllReduce over whole servers");
    sharp_ = true;
    seg_ = ceil_div(std::max<std::int64_t>(spec_.bytes, 0), comm_.gpus_per_server);
    sharp_packets_ = ceil_div(seg_, p_.sharp_payload);
    sharp_chunk_ = std::max<std::int64_t>(1, p_.chunk / p_.sharp_payload);
    sharp_chunks_ = ceil_div(sharp_packets_, sharp_chunk_);
    sharp_window_ = std::max<std::int64_t>(1, p_.sharp_window / p_.sharp_payload);
    sharp_gpu_.resize(static_cast<std::size_t>(n_));
    for (SharpGpu& g : sharp_gpu_) {
      g.ready.assign(static_cast<std::size_t>(sharp_chunks_), SimTime::zero());
      g.got.assign(static_cast<std::size_t>(sharp_chunks_), 0);
    }
  } else if (p_.algorithm == "tree") {
    STEPSIM_CHECK(spec_.kind == Kind::kAllReduce, "the tree algorithm is for AllReduce");
    build_trees();
  } else {
    build_rings();
  }
}

std::int64_t CollectiveApp::piece_bytes(const Lane& l, std::int64_t i) const {
  const std::int64_t m = pieces_per_step_;
  const std::int64_t k = i / m;
  const std::int64_t j = i % m;
  std::int64_t span = seg_;
  const bool ring = spec_.kind == Kind::kAllReduce || spec_.kind == Kind::kReduceScatter ||
                    spec_.kind == Kind::kAllGather;
  if (ring) {
    // Segment (pos - k) mod n of the channel's data; the last segment holds the remainder.
    const std::int64_t s = ((l.pos - k) % n_ + n_) % n_;
    span = s == n_ - 1 ? channel_bytes_ - seg_ * (n_ - 1) : seg_;
  }
  return std::clamp<std::int64_t>(span - j * p_.chunk, 0, p_.chunk);
}

bool CollectiveApp::reduces(const Lane& l, std::int64_t i) const {
  (void)l;
  switch (spec_.kind) {
    case Kind::kAllReduce:
      return i / pieces_per_step_ < n_ - 1;  // the ReduceScatter half
    case Kind::kReduceScatter:
    case Kind::kReduce:
      return true;
    default:
      return false;
  }
}

void CollectiveApp::build_rings() {
  const std::int64_t S = spec_.bytes;
  // Fewer channels for small messages (as NCCL does): at least 64 KiB per GPU and channel.
  channels_ =
      static_cast<int>(std::clamp<std::int64_t>(S / (std::int64_t{n_} * 65536), 1, p_.channels));
  channel_bytes_ = ceil_div(std::max<std::int64_t>(S, 0), channels_);
  const bool ring = spec_.kind != Kind::kBroadcast && spec_.kind != Kind::kReduce;
  steps_ = spec_.kind == Kind::kAllReduce ? 2 * (n_ - 1) : (ring ? n_ - 1 : 1);
  seg_ = ring ? ceil_div(channel_bytes_, n_) : channel_bytes_;
  pieces_per_step_ = std::max<std::int64_t>(1, ceil_div(seg_, p_.chunk));
  const auto G = comm_.gpus_per_server;
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G));
  lanes_.resize(static_cast<std::size_t>(n_) * static_cast<std::size_t>(channels_));
  for (int c = 0; c < channels_; ++c) {
    // The ring of channel c: servers in order, each entered at GPU r (the rail).
    const std::uint32_t local_n = std::min<std::uint32_t>(G, static_cast<std::uint32_t>(n_));
    const std::uint32_t r = static_cast<std::uint32_t>(c) % local_n;
    std::vector<std::uint32_t> order;
    for (std::uint32_t s = 0; s < servers; ++s) {
      for (std::uint32_t k = 0; k < local_n; ++k) order.push_back(s * G + (r + k) % local_n);
    }
    // Broadcast starts at the root; Reduce ends at it.
    std::uint32_t start = 0;
    const auto root_at = static_cast<std::uint32_t>(
        std::find(order.begin(), order.end(), static_cast<std::uint32_t>(spec_.root)) -
        order.begin());
    if (spec_.kind == Kind::kBroadcast) start = root_at;
    if (spec_.kind == Kind::kReduce) start = (root_at + 1) % static_cast<std::uint32_t>(n_);
    for (int q = 0; q < n_; ++q) {
      const std::uint32_t gpu = order[(start + static_cast<std::uint32_t>(q)) % order.size()];
      const std::uint32_t nxt = order[(start + static_cast<std::uint32_t>(q) + 1) % order.size()];
      const std::uint32_t li =
          gpu * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
      Lane& l = lanes_[li];
      l.gpu = gpu;
      l.pos = q;
      const bool last = q == n_ - 1;
      const bool first = q == 0;
      l.next = (!ring && last) || n_ == 1
                   ? kNone
                   : nxt * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
      const std::uint32_t prv =
          order[(start + static_cast<std::uint32_t>(n_ + q - 1)) % order.size()];
      l.prev = (!ring && first) || n_ == 1
                   ? kNone
                   : prv * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
      const std::int64_t m = pieces_per_step_;
      if (ring) {
        l.total_send = n_ == 1 ? 0 : steps_ * m;
        l.total_recv = l.total_send;
        l.dep = m;
      } else {
        l.total_send = last ? 0 : m;
        l.total_recv = first ? 0 : m;
        l.dep = first ? kSource : 0;
      }
      if (l.next == kNone) continue;
      const Gpu& a = comm_.gpus[gpu];
      const Gpu& b = comm_.gpus[nxt];
      l.next_intra = a.server == b.server;
      if (!l.next_intra) {
        // Network hop on rail r: NIC r of this server to NIC r of the next (PXN if the sending
        // GPU is not the rail's GPU).
        const Gpu& via = comm_.gpus[(gpu / G) * G + r];
        const Gpu& to = comm_.gpus[(nxt / G) * G + r];
        l.pxn = via.local != a.local;
        nic::Connection cn;
        cn.a = via.nic;
        cn.b = to.nic;
        cn.prio = p_.prio;
        cn.entropy = static_cast<std::uint16_t>(49152 + (conns_.size() % 16384));
        l.endpoint = nic::endpoint_of(static_cast<std::uint32_t>(conns_.size()), 0);
        conns_.push_back(cn);
      }
    }
  }
  owner_of_endpoint_.assign(conns_.size() * 2, kNone);
  for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
    const Lane& l = lanes_[li];
    if (l.next == kNone || l.next_intra) continue;
    owner_of_endpoint_[l.endpoint] = li;
    owner_of_endpoint_[nic::peer_endpoint(l.endpoint)] = l.next;
  }
  for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
    if (lanes_[li].total_send == 0 && lanes_[li].total_recv == 0) {
      lanes_[li].done_ps = 0;
      if (++lanes_done_[lanes_[li].gpu] == channels_) gpu_done_ps_[lanes_[li].gpu] = 0;
    }
  }
}

void CollectiveApp::build_alltoall() {
  // AllToAll (nccl-tests: S = count x n x type size per GPU; each peer gets S / n), AllToAllv
  // (spec.matrix[src x n + dst] bytes) and SendRecv (nccl-tests: every GPU sends S to the next
  // and receives S from the previous), all as point-to-point flows in NCCL's pairwise order.
  channels_ = 1;
  const auto G = comm_.gpus_per_server;
  expect_bytes_.assign(static_cast<std::size_t>(n_), 0);
  got_bytes_.assign(static_cast<std::size_t>(n_), 0);
  const auto bytes_of = [&](int src, int dst) -> std::int64_t {
    switch (spec_.kind) {
      case Kind::kAllToAllv:
        return spec_.matrix[static_cast<std::size_t>(src) * static_cast<std::size_t>(n_) +
                            static_cast<std::size_t>(dst)];
      case Kind::kSendRecv:
        return dst == (src + 1) % n_ ? spec_.bytes : 0;
      default:
        return spec_.bytes / n_;
    }
  };
  // One connection per (source server, destination server, rail), shared by the source
  // server's GPUs (PXN): the destination GPU is the rail's GPU there.
  std::vector<std::uint32_t> conn_of;  // (src server, dst GPU) -> connection
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G));
  conn_of.assign(static_cast<std::size_t>(servers) * static_cast<std::size_t>(n_), kNone);
  for (int step = 1; step < n_; ++step) {
    for (int g = 0; g < n_; ++g) {
      const auto src = static_cast<std::uint32_t>(g);
      const auto dst = static_cast<std::uint32_t>((g + step) % n_);  // pairwise order
      const std::int64_t bytes = bytes_of(g, static_cast<int>(dst));
      if (bytes <= 0) continue;
      Flow f;
      f.src = src;
      f.dst = dst;
      f.bytes = bytes;
      f.pieces = ceil_div(bytes, p_.chunk);
      expect_bytes_[dst] += bytes;
      const Gpu& a = comm_.gpus[src];
      const Gpu& b = comm_.gpus[dst];
      f.intra = a.server == b.server;
      // The source server's member on the destination's rail (PXN), or, when the communicator
      // has none there, a member chosen by destination.
      std::uint32_t via = (src / G) * G + dst % G;
      for (std::uint32_t k = (src / G) * G; k < (src / G + 1) * G; ++k) {
        if (comm_.gpus[k].local == b.local) via = k;
      }
      if (!f.intra) {
        const std::uint32_t key = (src / G) * static_cast<std::uint32_t>(n_) + dst;
        if (conn_of[key] == kNone) {
          nic::Connection cn;
          cn.a = comm_.gpus[via].nic;
          cn.b = b.nic;
          cn.prio = p_.prio;
          cn.entropy = static_cast<std::uint16_t>(49152 + (conns_.size() % 16384));
          conn_of[key] = static_cast<std::uint32_t>(conns_.size());
          conns_.push_back(cn);
        }
        f.endpoint = nic::endpoint_of(conn_of[key], 0);
        f.pxn = comm_.gpus[via].local != a.local;
      }
      flows_.push_back(f);
    }
  }
  owner_of_endpoint_.assign(conns_.size() * 2, kNone);
  posted_flows_.resize(conns_.size() * 2);
  for (const Flow& f : flows_) {
    if (!f.intra) owner_of_endpoint_[nic::peer_endpoint(f.endpoint)] = f.dst;
  }
  for (int g = 0; g < n_; ++g) {
    if (expect_bytes_[static_cast<std::size_t>(g)] == 0)
      gpu_done_ps_[static_cast<std::size_t>(g)] = 0;
  }
}

SimTime CollectiveApp::nvlink_hop(std::uint32_t gpu, SimTime now, std::int64_t wire_bytes) {
  SimTime& free = nvlink_free_[gpu];
  const SimTime start = std::max(now, free);
  free = start + nvlink_rate_.serialization_time(Bytes(wire_bytes));
  nvlink_bytes_[gpu] += static_cast<std::uint64_t>(wire_bytes);
  return free + p_.nvlink_latency;
}

void CollectiveApp::post_network(nic::Verbs& v, std::uint32_t endpoint, std::int64_t bytes) {
  nic::WorkRequest wr;
  wr.opcode = nic::Opcode::kWriteImm;
  wr.bytes = bytes;
  v.post(endpoint, wr);
}

void CollectiveApp::try_send(nic::Verbs& v, std::uint32_t li) {
  Lane& l = lanes_[li];
  if (l.next == kNone) return;
  while (l.sent < l.total_send && l.sent - l.acked < p_.slots &&
         (l.dep == kSource || l.recvd >= l.sent + 1 - l.dep)) {
    const std::int64_t payload = piece_bytes(l, l.sent);
    const auto wire =
        static_cast<std::int64_t>(static_cast<double>(payload) * p_.wire_factor() + 0.5);
    ++l.sent;
    if (l.next_intra) {
      const SimTime arrive = nvlink_hop(l.gpu, v.now(), wire);
      v.schedule(arrive - v.now(), kTagNvlink | l.next);
    } else if (l.pxn) {
      const SimTime there = nvlink_hop(l.gpu, v.now(), wire);
      v.schedule(there - v.now(), kTagPxn | li);
    } else {
      network_bytes_[l.gpu] += static_cast<std::uint64_t>(wire);
      post_network(v, l.endpoint, wire);
    }
  }
}

void CollectiveApp::on_received(nic::Verbs& v, std::uint32_t li, std::int64_t payload) {
  // The piece counts once the protocol's per-hop overhead and its reduction have passed.
  Lane& l = lanes_[li];
  const std::int64_t i = l.arrived++;
  SimTime delay = p_.hop_overhead(lanes_[l.prev].next_intra);
  if (reduces(l, i)) delay += p_.reduce_rate.serialization_time(Bytes(payload));
  v.schedule(delay, kTagRecv | li);
}

void CollectiveApp::lane_progress(nic::Verbs& v, std::uint32_t li) {
  Lane& l = lanes_[li];
  try_send(v, li);
  if (l.done_ps < 0 && l.recvd == l.total_recv && l.acked == l.total_send) {
    l.done_ps = v.now().picoseconds();
    if (++lanes_done_[l.gpu] == channels_) gpu_done_ps_[l.gpu] = l.done_ps;
  }
}

void CollectiveApp::alltoall_send(nic::Verbs& v, std::uint32_t fi) {
  Flow& f = flows_[fi];
  while (f.sent < f.pieces && f.sent - f.acked < p_.slots) {
    const std::int64_t payload = std::clamp<std::int64_t>(f.bytes - f.sent * p_.chunk, 0, p_.chunk);
    const auto wire =
        static_cast<std::int64_t>(static_cast<double>(payload) * p_.wire_factor() + 0.5);
    ++f.sent;
    if (f.intra) {
      const SimTime arrive = nvlink_hop(f.src, v.now(), wire);
      v.schedule(arrive - v.now() + p_.hop_overhead(true), kTagA2aNvlink | fi);
    } else if (f.pxn) {
      const SimTime there = nvlink_hop(f.src, v.now(), wire);
      v.schedule(there - v.now(), kTagA2aPxn | fi);
    } else {
      network_bytes_[f.src] += static_cast<std::uint64_t>(wire);
      posted_flows_[f.endpoint].push(fi);
      post_network(v, f.endpoint, wire);
    }
  }
}

void CollectiveApp::gpu_received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes) {
  got_bytes_[gpu] += bytes;
  if (got_bytes_[gpu] >= expect_bytes_[gpu] && gpu_done_ps_[gpu] < 0) {
    gpu_done_ps_[gpu] = v.now().picoseconds();
  }
}

namespace {

// An in-order binary tree over positions [lo, hi): the middle is the root of the range.
std::uint32_t build_btree(std::uint32_t lo, std::uint32_t hi, std::uint32_t parent,
                          std::vector<std::uint32_t>& parent_of) {
  if (lo >= hi) return kNone;
  const std::uint32_t mid = lo + (hi - lo) / 2;
  parent_of[mid] = parent;
  build_btree(lo, mid, mid, parent_of);
  build_btree(mid + 1, hi, mid, parent_of);
  return mid;
}

}  // namespace

std::int64_t CollectiveApp::tree_piece_bytes(std::int64_t i) const {
  return std::clamp<std::int64_t>(channel_bytes_ - i * p_.chunk, 0, p_.chunk);
}

void CollectiveApp::build_trees() {
  // NCCL's double binary tree: channel c uses tree c % 2 over the servers (the second tree is
  // the first shifted by one server, so a leaf of one is mostly inside the other) and rail
  // r = c mod GPUs per server. Inside a server the GPUs form a chain from GPU r, whose head
  // joins the server tree. Pieces go up (reduced at every node) and, from the root, down.
  const std::int64_t S = spec_.bytes;
  channels_ =
      static_cast<int>(std::clamp<std::int64_t>(S / (std::int64_t{n_} * 65536), 1, p_.channels));
  channel_bytes_ = ceil_div(std::max<std::int64_t>(S, 0), channels_);
  pieces_per_step_ = std::max<std::int64_t>(1, ceil_div(channel_bytes_, p_.chunk));
  const auto G = std::min<std::uint32_t>(comm_.gpus_per_server, static_cast<std::uint32_t>(n_));
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G));
  tree_.resize(static_cast<std::size_t>(n_) * static_cast<std::size_t>(channels_));
  const auto node_of = [&](std::uint32_t gpu, int c) {
    return gpu * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
  };
  const auto link = [&](std::uint32_t child, std::uint32_t parent) {
    TreeNode& ch = tree_[child];
    TreeNode& pa = tree_[parent];
    const auto k = static_cast<std::uint32_t>(pa.children++);
    STEPSIM_CHECK(k < 3, "a tree node with more than three children");
    const Gpu& a = comm_.gpus[ch.gpu];
    const Gpu& b = comm_.gpus[pa.gpu];
    TreeEdge& up = ch.edge[kUp];
    TreeEdge& down = pa.edge[k];
    up.peer = parent;
    up.peer_slot = k;
    down.peer = child;
    down.peer_slot = kUp;
    up.intra = down.intra = a.server == b.server;
    if (!up.intra) {
      nic::Connection cn;
      cn.a = a.nic;
      cn.b = b.nic;
      cn.prio = p_.prio;
      cn.entropy = static_cast<std::uint16_t>(49152 + (conns_.size() % 16384));
      const auto ci = static_cast<std::uint32_t>(conns_.size());
      conns_.push_back(cn);
      up.endpoint = nic::endpoint_of(ci, 0);    // the child posts up on side a
      down.endpoint = nic::endpoint_of(ci, 1);  // the parent posts down on side b
    }
  };
  for (int c = 0; c < channels_; ++c) {
    const std::uint32_t r = static_cast<std::uint32_t>(c) % G;
    std::vector<std::uint32_t> parent_of(servers, kNone);
    build_btree(0, servers, kNone, parent_of);
    const std::uint32_t shift = static_cast<std::uint32_t>(c % 2);
    for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) tree_[node_of(g, c)].gpu = g;
    for (std::uint32_t s = 0; s < servers; ++s) {
      // The server's chain: r, r + 1, ... (mod G); each GPU's parent is the one before it.
      for (std::uint32_t j = 1; j < G; ++j) {
        link(node_of(s * G + (r + j) % G, c), node_of(s * G + (r + j - 1) % G, c));
      }
    }
    for (std::uint32_t pos = 0; pos < servers; ++pos) {
      if (parent_of[pos] == kNone) continue;
      const std::uint32_t child = (pos + shift) % servers;
      const std::uint32_t parent = (parent_of[pos] + shift) % servers;
      link(node_of(child * G + r, c), node_of(parent * G + r, c));
    }
  }
  owner_of_endpoint_.assign(conns_.size() * 2, kNone);
  for (std::uint32_t t = 0; t < tree_.size(); ++t) {
    for (std::uint32_t k = 0; k < 4; ++k) {
      const TreeEdge& e = tree_[t].edge[k];
      if (e.peer != kNone && !e.intra) owner_of_endpoint_[e.endpoint] = t << 2 | k;
    }
  }
  if (n_ == 1) {
    tree_[0].done_ps = 0;
    gpu_done_ps_[0] = 0;
  }
}

void CollectiveApp::tree_transfer(nic::Verbs& v, std::uint32_t t, std::uint32_t slot,
                                  std::int64_t i) {
  TreeEdge& e = tree_[t].edge[slot];
  const auto wire =
      static_cast<std::int64_t>(static_cast<double>(tree_piece_bytes(i)) * p_.wire_factor() + 0.5);
  ++e.sent;
  const std::uint32_t gpu = tree_[t].gpu;
  if (e.intra) {
    const SimTime arrive = nvlink_hop(gpu, v.now(), wire);
    v.schedule(arrive - v.now(), kTagTreeArrive | (e.peer << 2 | e.peer_slot));
  } else {
    network_bytes_[gpu] += static_cast<std::uint64_t>(wire);
    post_network(v, e.endpoint, wire);
  }
}

void CollectiveApp::tree_arrived(nic::Verbs& v, std::uint32_t t, std::uint32_t slot) {
  // Up from a child: reduced, then counted; down from the parent: counted after the overhead.
  TreeEdge& e = tree_[t].edge[slot];
  const std::int64_t i = e.arrived++;
  SimTime delay = p_.hop_overhead(e.intra);
  if (slot != kUp) delay += p_.reduce_rate.serialization_time(Bytes(tree_piece_bytes(i)));
  v.schedule(delay, kTagTreeRecv | (t << 2 | slot));
}

void CollectiveApp::tree_progress(nic::Verbs& v, std::uint32_t t) {
  TreeNode& nd = tree_[t];
  const std::int64_t m = pieces_per_step_;
  // Pieces reduced here: every child's part has come up (a leaf has all of them).
  std::int64_t reduced = m;
  for (int k = 0; k < nd.children; ++k) reduced = std::min(reduced, nd.edge[k].recvd);
  TreeEdge& up = nd.edge[kUp];
  const bool root = up.peer == kNone;
  while (!root && up.sent < reduced && up.sent - up.acked < p_.slots) {
    tree_transfer(v, t, kUp, up.sent);
  }
  // Pieces that may go down: the root's reduced ones, or those that came down from the parent.
  const std::int64_t down = root ? reduced : up.recvd;
  for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(nd.children); ++k) {
    TreeEdge& e = nd.edge[k];
    while (e.sent < down && e.sent - e.acked < p_.slots) tree_transfer(v, t, k, e.sent);
  }
  bool done = down == m && (root || up.acked == m);
  for (int k = 0; k < nd.children && done; ++k) done = nd.edge[k].acked == m;
  if (done && nd.done_ps < 0) {
    nd.done_ps = v.now().picoseconds();
    if (++lanes_done_[nd.gpu] == channels_) gpu_done_ps_[nd.gpu] = nd.done_ps;
  }
}

// NVLS inside one server (NVLink SHARP): the NVSwitch reduces and multicasts. Reduce-scatter:
// the owner of a shard loads it with multimem.ld_reduce, so the switch reads every GPU's copy
// of every piece, its own included (n pieces over each GPU's NVLink); once all n are in, the
// switch hands the reduced piece to the owner. All-gather: the owner stores it once and the
// switch multicasts it. Each GPU's NVLink carries (n+1)/n S where the ring's carries
// 2(n-1)/n S, at gpu.nvls_efficiency of the copy rate.
// Tags: piece (14 bits) | channel (6 bits) << 14 | GPU (8 bits) << 20.
void CollectiveApp::nvls_start(nic::Verbs& v) {
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) {
    if (comm_.gpus[g].server != v.server()) continue;
    for (int c = 0; c < channels_; ++c) {
      for (std::int64_t i = 0; i < pieces_per_step_; ++i) {
        const std::int64_t piece = std::clamp<std::int64_t>(seg_ - i * p_.chunk, 0, p_.chunk);
        const auto wire =
            static_cast<std::int64_t>(static_cast<double>(piece * n_) * p_.wire_factor() + 0.5);
        const SimTime at = nvlink_hop(g, v.now(), wire);
        const auto tag =
            static_cast<std::uint32_t>(i) | static_cast<std::uint32_t>(c) << 14 | g << 20;
        v.schedule(at - v.now(), kTagNvlsIn | tag);
      }
    }
  }
}

void CollectiveApp::nvls_event(nic::Verbs& v, std::uint32_t tag) {
  const std::uint32_t x = tag & ~kTagMask;
  const std::int64_t i = x & 0x3fff;
  const int c = static_cast<int>((x >> 14) & 0x3f);
  const std::uint32_t g = x >> 20;
  const std::int64_t piece = std::clamp<std::int64_t>(seg_ - i * p_.chunk, 0, p_.chunk);
  const auto wire = static_cast<std::int64_t>(static_cast<double>(piece) * p_.wire_factor() + 0.5);
  switch (tag & kTagMask) {
    case kTagNvlsIn: {
      // All n contributions in: every owner gets its reduced piece back (after the reduction
      // in the switch and the way back over NVLink, with the protocol's overhead).
      if (++nvls_in_[static_cast<std::size_t>(c * pieces_per_step_ + i)] < n_) break;
      const SimTime back = p_.reduce_rate.serialization_time(Bytes(piece * n_)) +
                           p_.nvlink_latency + p_.hop_overhead(true);
      for (std::uint32_t h = 0; h < static_cast<std::uint32_t>(n_); ++h) {
        v.schedule(back, kTagNvlsOut | (x & 0xfffff) | h << 20);
      }
      break;
    }
    case kTagNvlsOut: {
      // The owner stores its reduced piece once; the switch multicasts it to the others.
      const SimTime at = nvlink_hop(g, v.now(), wire) + p_.hop_overhead(true);
      for (std::uint32_t h = 0; h < static_cast<std::uint32_t>(n_); ++h) {
        if (h != g) v.schedule(at - v.now(), kTagNvlsMc | h << 20);
      }
      break;
    }
    case kTagNvlsMc: {
      // Done when every other GPU's every piece has arrived.
      if (++nvls_got_[g] == static_cast<std::int64_t>(n_ - 1) * channels_ * pieces_per_step_) {
        gpu_done_ps_[g] = v.now().picoseconds();
      }
      break;
    }
    default:
      break;
  }
}

void CollectiveApp::on_start(nic::Verbs& v) {
  // The protocol's base latency (launch and set-up) comes before the first piece moves.
  v.schedule(p_.base_latency(), kTagStart);
}

void CollectiveApp::start(nic::Verbs& v) {
  if (nvls_) {
    nvls_start(v);
    return;
  }
  if (sharp_) {
    sharp_start(v);
    return;
  }
  if (!tree_.empty()) {
    for (std::uint32_t t = 0; t < tree_.size(); ++t) {
      if (comm_.gpus[tree_[t].gpu].server == v.server()) tree_progress(v, t);
    }
    return;
  }
  if (point_to_point()) {
    for (std::uint32_t fi = 0; fi < flows_.size(); ++fi) {
      if (comm_.gpus[flows_[fi].src].server == v.server()) alltoall_send(v, fi);
    }
    return;
  }
  for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
    if (comm_.gpus[lanes_[li].gpu].server == v.server()) lane_progress(v, li);
  }
}

void CollectiveApp::on_timer(nic::Verbs& v, std::uint32_t tag) {
  const std::uint32_t x = tag & ~kTagMask;
  switch (tag & kTagMask) {
    case kTagStart:
      start(v);
      break;
    case kTagNvlink: {
      Lane& l = lanes_[x];
      Lane& from = lanes_[l.prev];
      ++from.acked;  // the slot is free once the piece is in the peer's buffer
      on_received(v, x, piece_bytes(from, l.arrived));
      lane_progress(v, l.prev);
      break;
    }
    case kTagRecv:
      ++lanes_[x].recvd;
      lane_progress(v, x);
      break;
    case kTagPxn: {
      Lane& l = lanes_[x];
      const std::int64_t payload = piece_bytes(l, l.pxn_posted++);
      const auto wire =
          static_cast<std::int64_t>(static_cast<double>(payload) * p_.wire_factor() + 0.5);
      network_bytes_[l.gpu] += static_cast<std::uint64_t>(wire);
      post_network(v, l.endpoint, wire);
      break;
    }
    case kTagA2aNvlink: {
      Flow& f = flows_[x];
      ++f.acked;
      gpu_received(v, f.dst,
                   std::clamp<std::int64_t>(f.bytes - (f.acked - 1) * p_.chunk, 0, p_.chunk));
      alltoall_send(v, x);
      break;
    }
    case kTagA2aPxn: {
      Flow& f = flows_[x];
      const std::int64_t payload =
          std::clamp<std::int64_t>(f.bytes - (f.pxn_posted++) * p_.chunk, 0, p_.chunk);
      const auto wire =
          static_cast<std::int64_t>(static_cast<double>(payload) * p_.wire_factor() + 0.5);
      network_bytes_[f.src] += static_cast<std::uint64_t>(wire);
      posted_flows_[f.endpoint].push(x);
      post_network(v, f.endpoint, wire);
      break;
    }
    case kTagTreeArrive: {
      // The sender's slot frees once the piece is in this GPU's buffer.
      const std::uint32_t t = x >> 2;
      const std::uint32_t slot = x & 3;
      const TreeEdge& e = tree_[t].edge[slot];
      ++tree_[e.peer].edge[e.peer_slot].acked;
      tree_arrived(v, t, slot);
      tree_progress(v, e.peer);
      break;
    }
    case kTagNvlsIn:
    case kTagNvlsOut:
    case kTagNvlsMc:
      nvls_event(v, tag);
      break;
    case kTagSharp:
      sharp_gpu_[x].timer = false;
      sharp_send(v, x);
      break;
    case kTagTreeRecv:
      ++tree_[x >> 2].edge[x & 3].recvd;
      tree_progress(v, x >> 2);
      break;
    default:
      fatal("collective: unknown timer tag " + std::to_string(tag));
  }
}

void CollectiveApp::on_cq(nic::Verbs& v, std::uint32_t endpoint) {
  std::array<nic::Completion, 16> wc;
  std::size_t k;
  while ((k = v.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < k; ++i) {
      const nic::Completion& c = wc[i];
      STEPSIM_CHECK(c.status == nic::WcStatus::kSuccess,
                    "collective: a transfer failed on endpoint " + std::to_string(endpoint));
      if (!c.recv) fct_[server_rank_of_node_[v.server()]].add((c.done - c.posted).picoseconds());
      if (point_to_point()) {
        if (c.recv) {
          const auto payload =
              static_cast<std::int64_t>(static_cast<double>(c.bytes) / p_.wire_factor() + 0.5);
          gpu_received(v, owner_of_endpoint_[endpoint], payload);
        } else {
          // Send completions come in posting order: credit the flow that posted first.
          const std::uint32_t fi = posted_flows_[endpoint].pop();
          ++flows_[fi].acked;
          alltoall_send(v, fi);
        }
        continue;
      }
      if (!tree_.empty()) {
        const std::uint32_t t = owner_of_endpoint_[endpoint] >> 2;
        const std::uint32_t slot = owner_of_endpoint_[endpoint] & 3;
        if (c.recv) {
          tree_arrived(v, t, slot);
        } else {
          ++tree_[t].edge[slot].acked;
          tree_progress(v, t);
        }
        continue;
      }
      const std::uint32_t li = owner_of_endpoint_[endpoint];
      if (c.recv) {
        on_received(v, li, piece_bytes(lanes_[lanes_[li].prev], lanes_[li].arrived));
      } else {
        ++lanes_[li].acked;
        lane_progress(v, li);
      }
    }
  }
}

CollectiveResult CollectiveApp::result(pdes::Sync& sync) const {
  // Each GPU's record lives on the rank of its server: sums gather them (+1: "never" is 0).
  const auto n = static_cast<std::size_t>(n_);
  std::vector<std::uint64_t> buf(3 * n, 0);
  for (std::size_t g = 0; g < n; ++g) {
    buf[g] = static_cast<std::uint64_t>(gpu_done_ps_[g] + 1);
    buf[n + g] = nvlink_bytes_[g];
    buf[2 * n + g] = network_bytes_[g];
  }
  sync.allreduce_sum(buf);
  CollectiveResult r;
  for (const LogHistogram& h : fct_) r.message_fct.merge(h);
  std::vector<std::uint64_t> bins(r.message_fct.bins().begin(), r.message_fct.bins().end());
  sync.allreduce_sum(bins);
  std::copy(bins.begin(), bins.end(), r.message_fct.bins().begin());
  for (std::size_t g = 0; g < n; ++g) {
    r.gpu_done_ps.push_back(static_cast<std::int64_t>(buf[g]) - 1);
    r.time_ps = std::max(r.time_ps, r.gpu_done_ps.back());
    r.nvlink_bytes += buf[n + g];
    r.network_bytes += buf[2 * n + g];
  }
  return r;
}

Result<CollectiveParams> prepare_collective(const topology::Topology& topo,
                                            const Communicator& comm, const CollectiveSpec& spec,
                                            const CollectiveParams& params,
                                            const fabric::FabricParams& fabric, Choice& choice) {
  if (auto ok = params.validate(); !ok) return ok.error();
  if (spec.bytes < 0) return Error{"collective size must be >= 0 bytes"};
  const bool allreduce_only =
      params.algorithm == "tree" || params.algorithm == "nvls" || params.algorithm == "sharp";
  if (allreduce_only && spec.kind != Kind::kAllReduce) {
    return Error{"coll.algorithm: " + params.algorithm + " is for allreduce only (allowed for " +
                 kind_name(spec.kind) + ": ring)"};
  }
  if (params.algorithm == "nvls" && comm.gpus.front().server != comm.gpus.back().server) {
    return Error{
        "coll.algorithm: nvls needs the GPUs in one server (one NVLink domain); NVLS "
        "across servers (NVLS-tree) is not modelled yet"};
  }
  if (params.algorithm == "nvls" && params.nvls_efficiency <= 0) {
    return Error{"coll.algorithm: nvls needs NVLink SHARP, which " + params.gpu +
                 " does not have (gpu.nvls_efficiency 0)"};
  }
  if (params.algorithm == "nvls") {
    const std::int64_t shard = (spec.bytes + std::int64_t{comm.size()} * params.channels - 1) /
                               (std::int64_t{comm.size()} * params.channels);
    if (comm.size() > 255 || (shard + params.chunk - 1) / params.chunk >= (1 << 14)) {
      return Error{
          "coll.algorithm: nvls supports up to 255 GPUs and 16,383 pieces per shard "
          "(raise coll.chunk)"};
    }
  }
  if (spec.kind == Kind::kAllToAllv) {
    const auto n = static_cast<std::size_t>(comm.size());
    if (spec.matrix.size() != n * n) {
      return Error{"alltoallv needs a " + std::to_string(n) + " x " + std::to_string(n) +
                   " byte matrix (got " + std::to_string(spec.matrix.size()) + " entries)"};
    }
    for (std::int64_t b : spec.matrix) {
      if (b < 0) return Error{"alltoallv: a negative size in the byte matrix"};
    }
  }
  if (spec.root < 0 || spec.root >= comm.size()) {
    return Error{"root " + std::to_string(spec.root) + " is not a rank (0.." +
                 std::to_string(comm.size() - 1) + ")"};
  }
  // The tuner: one NIC's RDMA goodput (MTU payloads in frames with headers and gap).
  const topology::PortId nic_port = comm.gpus[0].nic;
  if (topo.ports[nic_port].link == kNone) return Error{"GPU 0's NIC is not cabled"};
  const DataRate goodput =
      fabric::rdma_goodput(topo.link_rate(topo.ports[nic_port].link), fabric.mtu);
  choice = choose(spec.kind, spec.bytes, comm.size(), comm.gpus_per_server, params, goodput);
  CollectiveParams chosen = params;
  const bool p2p =
      spec.kind == Kind::kAllToAll || spec.kind == Kind::kAllToAllv || spec.kind == Kind::kSendRecv;
  chosen.algorithm = p2p ? "ring" : choice.algorithm;
  chosen.protocol = choice.protocol;
  return chosen;
}

Result<CollectiveRun> run_collective(const topology::Topology& topo, const Communicator& comm,
                                     const CollectiveSpec& spec, const CollectiveParams& params,
                                     const nic::NicParams& nic, const fabric::FabricParams& fabric,
                                     pdes::Sync& sync, pdes::EngineOptions engine_options) {
  Choice choice;
  auto prepared = prepare_collective(topo, comm, spec, params, fabric, choice);
  if (!prepared) return prepared.error();
  CollectiveParams chosen = std::move(prepared).value();
  std::unique_ptr<SharpAgent> sharp;
  if (chosen.algorithm == "sharp") {
    if (chosen.protocol != "simple") {
      return Error{"coll.protocol: sharp runs with the simple protocol (got " + chosen.protocol +
                   ")"};
    }
    chosen.sharp_payload = fabric.segment().count();
    if (chosen.sharp_window < chosen.sharp_payload) {
      return Error{"coll.sharp.window: at least one frame (" +
                   std::to_string(chosen.sharp_payload) + " bytes, the MTU or the cell)"};
    }
    auto trees = plan_sharp(topo, comm, chosen);
    if (!trees) return trees.error();
    sharp = std::make_unique<SharpAgent>(
        topo, std::move(trees).value(), chosen,
        static_cast<std::uint32_t>(chosen.sharp_window / chosen.sharp_payload));
  }
  CollectiveApp app(comm, spec, chosen);
  auto r = nic::run_rdma(topo, app.connections(), nic, fabric, &app, sync,
                         std::move(engine_options), sharp.get());
  if (!r) return r.error();
  CollectiveRun out{app.result(sync), std::move(r).value(), choice, {}, app.connections()};
  if (sharp) out.sharp = sharp->collect(sync);
  return out;
}

kernels::AlphaBeta analytical_bound(const topology::Topology& topo, const fabric::Routing& routing,
                                    const Communicator& comm, Kind kind, std::int64_t bytes,
                                    const CollectiveParams& params,
                                    const fabric::FabricParams& fabric) {
  const int n = comm.size();
  const std::uint32_t G = std::min<std::uint32_t>(comm.gpus_per_server, n);
  const int servers = static_cast<int>((n + G - 1) / G);
  const double nvlink = static_cast<double>(params.nvlink_payload().bits_per_second()) / 8;
  const double nvl = params.nvlink_latency.seconds();
  kernels::AlphaBeta ab;
  ab.bytes = busbw_factor(kind, n) * static_cast<double>(bytes);
  double net = 0;
  ab.rate = nvlink;
  if (servers > 1) {
    const topology::PortId a = comm.gpus[0].nic;
    net = nic::RdmaHost::base_rtt(topo, routing, fabric, a, comm.gpus[G].nic).seconds() / 2;
    const double nic =
        static_cast<double>(fabric::rdma_goodput(topo.link_rate(topo.ports[a].link), fabric.mtu)
                                .bits_per_second()) /
        8;
    ab.rate = std::min(G * nic, nvlink);
  }
  // The chain: the protocol's base latency, then the hops a piece of data crosses one after the
  // other, each at its transport's one-way latency plus the protocol's per-hop overhead (both
  // are in the packet model too). Ring: 2(n-1) steps for AllReduce, n-1 for the
  // others, `servers` of every n over the network. Tree (AllReduce): up and down the chain inside
  // a server and the servers' binary tree. Point to point: one hop. With "auto", the smallest.
  const bool p2p = kind == Kind::kAllToAll || kind == Kind::kAllToAllv || kind == Kind::kSendRecv;
  const double steps = kind == Kind::kAllReduce ? 2.0 * (n - 1) : n - 1.0;
  const double depth = servers > 1 ? std::ceil(std::log2(servers)) : 0;
  std::vector<std::pair<double, double>> chains;  // (network hops, NVLink hops)
  if (p2p) {
    chains.emplace_back(servers > 1 ? 1 : 0, servers > 1 ? 0 : 1);
  } else {
    const double inter = servers > 1 ? steps * servers / n : 0;
    if (params.algorithm != "tree" || kind != Kind::kAllReduce) {
      chains.emplace_back(inter, steps - inter);
    }
    if (params.algorithm != "ring" && kind == Kind::kAllReduce) {
      chains.emplace_back(2 * depth, 2.0 * (G - 1));
    }
  }
  // Pieces pipeline, so the chain bounds the time on its own; with the bytes, only the base
  // latency and the last piece's one hop add to the bottleneck's time.
  std::vector<std::string> protocols = {params.protocol};
  if (params.protocol == "auto") protocols = {"simple", "ll", "ll128"};
  ab.latency_s = std::numeric_limits<double>::infinity();
  ab.chain_s = std::numeric_limits<double>::infinity();
  for (const std::string& pr : protocols) {
    CollectiveParams q = params;
    q.protocol = pr;
    const double base = q.base_latency().seconds();
    // Point-to-point pieces over the network count at their completion, with no overhead.
    const double hop_net = net + (p2p ? 0.0 : q.hop_overhead(false).seconds());
    const double hop_nvl = nvl + q.hop_overhead(true).seconds();
    for (const auto& [inter, intra] : chains) {
      ab.chain_s = std::min(ab.chain_s, base + inter * hop_net + intra * hop_nvl);
      ab.latency_s = std::min(ab.latency_s, base + (inter > 0 && intra == 0 ? hop_net : hop_nvl));
    }
  }
  return ab;
}

}  // namespace stepsim::collective
