// The ring and chain runtime (see lane_run.hpp).
#include "src/collective/lane_run.hpp"

#include <algorithm>
#include <limits>

#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

using topology::kNone;

namespace {

constexpr std::int64_t kSource = std::numeric_limits<std::int64_t>::max() / 4;

}  // namespace

LaneRun::LaneRun(CollectiveCore& core, bool chain)
    : AlgorithmRun(core), chain_(chain), n_(core.size()) {
  build();
}

std::int64_t LaneRun::piece_bytes(const Lane& l, std::int64_t i) const {
  const std::int64_t m = pieces_per_step_;
  const std::int64_t k = i / m;
  const std::int64_t j = i % m;
  std::int64_t span = seg_;
  if (!chain_) {
    // Segment (pos - k) mod n of the channel's data; the last segment holds the remainder.
    const std::int64_t s = ((l.pos - k) % n_ + n_) % n_;
    span = s == n_ - 1 ? channel_bytes_ - seg_ * (n_ - 1) : seg_;
  }
  const std::int64_t chunk = core_.params().chunk;
  return std::clamp<std::int64_t>(span - j * chunk, 0, chunk);
}

bool LaneRun::reduces(std::int64_t i) const {
  switch (core_.spec().kind) {
    case Kind::kAllReduce:
      return i / pieces_per_step_ < n_ - 1;  // the ReduceScatter half
    case Kind::kReduceScatter:
    case Kind::kReduce:
      return true;
    default:
      return false;
  }
}

void LaneRun::build() {
  const CollectiveSpec& spec = core_.spec();
  // Fewer channels for small messages (as NCCL does).
  channels_ = core_.ring_channels_for_size();
  channel_bytes_ = ceil_div(std::max<std::int64_t>(spec.bytes, 0), channels_);
  steps_ = spec.kind == Kind::kAllReduce ? 2 * (n_ - 1) : (chain_ ? 1 : n_ - 1);
  seg_ = chain_ ? channel_bytes_ : ceil_div(channel_bytes_, n_);
  pieces_per_step_ = std::max<std::int64_t>(1, ceil_div(seg_, core_.params().chunk));
  lanes_.resize(static_cast<std::size_t>(n_) * static_cast<std::size_t>(channels_));
  for (int c = 0; c < channels_; ++c) build_channel(c);
  owner_of_endpoint_.assign(core_.connections().size() * 2, kNone);
  for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
    const Lane& l = lanes_[li];
    if (l.next == kNone || l.next_intra) continue;
    owner_of_endpoint_[l.endpoint] = li;
    owner_of_endpoint_[nic::peer_endpoint(l.endpoint)] = l.next;
  }
  for (Lane& l : lanes_) {
    if (l.total_send == 0 && l.total_recv == 0) {
      l.done_ps = 0;
      core_.part_done(l.gpu, 0, channels_);
    }
  }
}

std::vector<std::uint32_t> LaneRun::ring_order(std::uint32_t rail) const {
  // Servers in order, each entered at GPU `rail`.
  const std::uint32_t G = core_.comm().gpus_per_server;
  const std::uint32_t local_n = std::min<std::uint32_t>(G, static_cast<std::uint32_t>(n_));
  const auto servers = static_cast<std::uint32_t>(ceil_div(n_, G));
  std::vector<std::uint32_t> order;
  for (std::uint32_t s = 0; s < servers; ++s) {
    for (std::uint32_t k = 0; k < local_n; ++k) order.push_back(s * G + (rail + k) % local_n);
  }
  return order;
}

void LaneRun::build_channel(int c) {
  const CollectiveSpec& spec = core_.spec();
  const std::uint32_t local_n =
      std::min<std::uint32_t>(core_.comm().gpus_per_server, static_cast<std::uint32_t>(n_));
  const std::uint32_t r = core_.rail_member(c) % local_n;
  const std::vector<std::uint32_t> order = ring_order(r);
  const auto lane_of = [&](std::uint32_t gpu) {
    return gpu * static_cast<std::uint32_t>(channels_) + static_cast<std::uint32_t>(c);
  };
  // Broadcast starts at the root; Reduce ends at it.
  std::uint32_t start = 0;
  const auto root_at = static_cast<std::uint32_t>(
      std::find(order.begin(), order.end(), static_cast<std::uint32_t>(spec.root)) - order.begin());
  if (spec.kind == Kind::kBroadcast) start = root_at;
  if (spec.kind == Kind::kReduce) start = (root_at + 1) % static_cast<std::uint32_t>(n_);
  const auto at = [&](int q) {
    return order[(start + static_cast<std::uint32_t>(q)) % order.size()];
  };
  for (int q = 0; q < n_; ++q) {
    Lane& l = lanes_[lane_of(at(q))];
    l.gpu = at(q);
    l.pos = q;
    const bool last = q == n_ - 1;
    const bool first = q == 0;
    l.next = (chain_ && last) || n_ == 1 ? kNone : lane_of(at(q + 1));
    l.prev = (chain_ && first) || n_ == 1 ? kNone : lane_of(at(n_ + q - 1));
    const std::int64_t m = pieces_per_step_;
    if (!chain_) {
      l.total_send = n_ == 1 ? 0 : steps_ * m;
      l.total_recv = l.total_send;
      l.dep = m;
    } else {
      l.total_send = last ? 0 : m;
      l.total_recv = first ? 0 : m;
      l.dep = first ? kSource : 0;
    }
    if (l.next != kNone) connect(l, at(q + 1), r);
  }
}

void LaneRun::connect(Lane& l, std::uint32_t next_gpu, std::uint32_t rail) {
  const std::uint32_t G = core_.comm().gpus_per_server;
  const Gpu& a = core_.gpu(l.gpu);
  l.next_intra = a.server == core_.gpu(next_gpu).server;
  if (l.next_intra) return;
  // Network hop on the rail: NIC r of this server to NIC r of the next (PXN if the sending GPU
  // is not the rail's GPU).
  const Gpu& via = core_.gpu((l.gpu / G) * G + rail);
  const Gpu& to = core_.gpu((next_gpu / G) * G + rail);
  l.pxn = via.local != a.local;
  l.endpoint = nic::endpoint_of(core_.add_connection(via.nic, to.nic), 0);
}

void LaneRun::try_send(nic::Verbs& v, std::uint32_t li) {
  Lane& l = lanes_[li];
  if (l.next == kNone) return;
  while (l.sent < l.total_send && l.sent - l.acked < core_.params().slots && !l.on_nvlink &&
         (l.dep == kSource || l.recvd >= l.sent + 1 - l.dep)) {
    const std::int64_t wire = core_.wire_bytes(piece_bytes(l, l.sent));
    ++l.sent;
    if (l.next_intra) {
      l.on_nvlink = true;
      const SimTime arrive = core_.nvlink_hop(l.gpu, v.now(), wire);
      core_.schedule(v, arrive - v.now(), TimerPayload{.event = kNvlink, .index = l.next});
    } else if (l.pxn) {
      l.on_nvlink = true;
      const SimTime there = core_.nvlink_hop(l.gpu, v.now(), wire);
      core_.schedule(v, there - v.now(), TimerPayload{.event = kPxn, .index = li});
    } else {
      core_.post_network(v, l.gpu, l.endpoint, wire);
    }
  }
}

void LaneRun::on_received(nic::Verbs& v, std::uint32_t li, std::int64_t payload) {
  // The piece counts once the protocol's per-hop overhead and its reduction have passed.
  Lane& l = lanes_[li];
  const std::int64_t i = l.arrived++;
  const CollectiveParams& p = core_.params();
  SimTime delay = p.hop_overhead(lanes_[l.prev].next_intra);
  if (reduces(i)) delay += p.reduce_rate.serialization_time(Bytes(payload));
  core_.schedule(v, delay, TimerPayload{.event = kRecv, .index = li});
}

void LaneRun::progress(nic::Verbs& v, std::uint32_t li) {
  Lane& l = lanes_[li];
  try_send(v, li);
  if (l.done_ps < 0 && l.recvd == l.total_recv && l.acked == l.total_send) {
    l.done_ps = v.now().picoseconds();
    core_.part_done(l.gpu, l.done_ps, channels_);
  }
}

void LaneRun::start(nic::Verbs& v) {
  for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
    if (core_.local(v, lanes_[li].gpu)) progress(v, li);
  }
}

void LaneRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  const std::uint32_t x = t.index;
  switch (t.event) {
    case kNvlink: {
      Lane& l = lanes_[x];
      Lane& from = lanes_[l.prev];
      ++from.acked;  // the slot is free once the piece is in the peer's buffer
      from.on_nvlink = false;
      on_received(v, x, piece_bytes(from, l.arrived));
      progress(v, l.prev);
      break;
    }
    case kRecv:
      ++lanes_[x].recvd;
      progress(v, x);
      break;
    case kPxn: {
      Lane& l = lanes_[x];
      core_.post_network(v, l.gpu, l.endpoint, core_.wire_bytes(piece_bytes(l, l.pxn_posted++)));
      l.on_nvlink = false;
      progress(v, x);
      break;
    }
    default:
      fatal("collective: ring: unknown timer event " + std::to_string(t.event));
  }
}

void LaneRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  const std::uint32_t li = owner_of_endpoint_[endpoint];
  if (c.recv) {
    on_received(v, li, piece_bytes(lanes_[lanes_[li].prev], lanes_[li].arrived));
  } else {
    ++lanes_[li].acked;
    progress(v, li);
  }
}

}  // namespace stepsim::collective
