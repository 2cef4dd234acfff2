// The machinery every collective algorithm's runtime shares (see collective_core.hpp). NVLink is
// a per-GPU egress timeline (bandwidth per direction) plus a latency; the NVSwitch is not a
// bottleneck.
#include "src/collective/collective_core.hpp"

#include <algorithm>

#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

using topology::kNone;

void AlgorithmRun::on_completion(nic::Verbs& /*v*/, std::uint32_t endpoint,
                                 const nic::Completion& /*c*/) {
  fatal("collective: a completion on endpoint " + std::to_string(endpoint) +
        " of an algorithm without connections");
}

void AlgorithmRun::on_in_network(nic::Verbs& /*v*/, topology::PortId /*nic*/,
                                 const fabric::Packet& /*pkt*/) {
  fatal("collective: an in-network packet outside a SHARP collective");
}

CollectiveCore::CollectiveCore(const Communicator& comm, CollectiveSpec spec,
                               const CollectiveParams& params)
    : comm_(comm), spec_(std::move(spec)), p_(params), n_(comm.size()) {
  STEPSIM_CHECK(n_ >= 1 && p_.validate().ok(), "invalid collective");
  nvlink_rate_ = p_.nvlink_payload();
  const auto n = static_cast<std::size_t>(n_);
  nvlink_free_.assign(n, SimTime::zero());
  nvlink_shared_.assign(n, nullptr);
  parts_done_.assign(n, 0);
  gpu_done_ps_.assign(n, -1);
  nvlink_bytes_.assign(n, 0);
  network_bytes_.assign(n, 0);
  // Servers in communicator order (GPU g is on server g / GPUs per server).
  topology::NodeId top = 0;
  for (const Gpu& g : comm_.gpus) top = std::max(top, g.server);
  server_rank_of_node_.assign(top + 1, kNone);
  for (int g = 0; g < n_; ++g) {
    server_rank_of_node_[comm_.gpus[static_cast<std::size_t>(g)].server] =
        static_cast<std::uint32_t>(g) / comm_.gpus_per_server;
  }
  const auto servers = static_cast<std::size_t>(ceil_div(n_, comm_.gpus_per_server));
  fct_.resize(servers);
}

int CollectiveCore::channels_for_size(bool per_gpu) const {
  const std::int64_t split = per_gpu ? std::int64_t{n_} : 1;
  return static_cast<int>(std::clamp<std::int64_t>(spec_.bytes / (split * 65536), 1, p_.channels));
}

std::int64_t CollectiveCore::wire_bytes(std::int64_t payload) const {
  return static_cast<std::int64_t>(static_cast<double>(payload) * p_.wire_factor() + 0.5);
}

SimTime CollectiveCore::nvlink_hop(std::uint32_t gpu, SimTime now, std::int64_t wire_bytes) {
  SimTime& free = nvlink_shared_[gpu] != nullptr ? *nvlink_shared_[gpu] : nvlink_free_[gpu];
  const SimTime start = std::max(now, free);
  free = start + nvlink_rate_.serialization_time(Bytes(wire_bytes));
  nvlink_bytes_[gpu] += static_cast<std::uint64_t>(wire_bytes);
  return free + p_.nvlink_latency;
}

void CollectiveCore::post_network(nic::Verbs& v, std::uint32_t gpu, std::uint32_t endpoint,
                                  std::int64_t wire_bytes) {
  network_bytes_[gpu] += static_cast<std::uint64_t>(wire_bytes);
  nic::WorkRequest wr;
  wr.opcode = nic::Opcode::kWriteImm;
  wr.bytes = wire_bytes;
  v.post(endpoint, wr);
}

std::uint32_t CollectiveCore::add_connection(topology::PortId a, topology::PortId b) {
  nic::Connection cn;
  cn.a = a;
  cn.b = b;
  cn.prio = p_.prio;
  cn.entropy = static_cast<std::uint16_t>(49152 + (conns_.size() % 16384));
  conns_.push_back(cn);
  flows_.resize(2 * conns_.size());  // sized here, not from the threads that run the servers
  ecn_in_.resize(2 * conns_.size(), 0);
  return static_cast<std::uint32_t>(conns_.size() - 1);
}

void CollectiveCore::schedule(nic::Verbs& v, SimTime delay, const TimerPayload& payload) {
  v.schedule(delay, nic::AppTimer{.tag = kPayloadTag, .data = nic::TimerData::of(payload)});
}

void CollectiveCore::part_done(std::uint32_t gpu, std::int64_t ps, int parts) {
  if (++parts_done_[gpu] == parts) gpu_done_ps_[gpu] = ps;
}

void CollectiveCore::record_send(const nic::Verbs& v, const nic::Completion& c) {
  fct_[server_rank(v.server())].add((c.done - c.posted).picoseconds());
  ConnectionFlow& f = flows_[c.endpoint];
  f.bytes += static_cast<std::uint64_t>(c.bytes);
  ++f.messages;
  f.packets += c.packets;
  f.retransmitted += c.retransmitted;
  const auto earliest = [](std::int64_t& t, std::int64_t x) { t = t < 0 ? x : std::min(t, x); };
  earliest(f.first_post_ps, c.posted.picoseconds());
  if (!c.first_byte.is_never()) earliest(f.first_byte_ps, c.first_byte.picoseconds());
  f.last_done_ps = std::max(f.last_done_ps, c.done.picoseconds());
}

void CollectiveCore::record_recv(const nic::Completion& c) {
  ecn_in_[c.endpoint] += c.ecn_marked;
}

namespace {

// Every endpoint's flow counters over the ranks: each endpoint's are on its server's rank and
// zero elsewhere, so sums gather them (+1 on times: "never" is 0). ECN marks move from the
// receiving endpoint to the direction that sent them.
std::vector<ConnectionFlow> gather_flows(const std::vector<ConnectionFlow>& flows,
                                         const std::vector<std::uint64_t>& ecn_in,
                                         pdes::Sync& sync) {
  constexpr std::size_t kFields = 8;
  const std::size_t n = flows.size();
  std::vector<std::uint64_t> buf(kFields * n, 0);
  const auto plus1 = [](std::int64_t t) { return static_cast<std::uint64_t>(t + 1); };
  for (std::size_t e = 0; e < n; ++e) {
    const ConnectionFlow& f = flows[e];
    std::uint64_t* b = &buf[kFields * e];
    b[0] = f.bytes;
    b[1] = f.messages;
    b[2] = f.packets;
    b[3] = f.retransmitted;
    b[4] = ecn_in[e];
    b[5] = plus1(f.first_post_ps);
    b[6] = plus1(f.first_byte_ps);
    b[7] = plus1(f.last_done_ps);
  }
  sync.allreduce_sum(buf);
  std::vector<ConnectionFlow> out(n);
  const auto minus1 = [](std::uint64_t t) { return static_cast<std::int64_t>(t) - 1; };
  for (std::size_t e = 0; e < n; ++e) {
    const std::uint64_t* b = &buf[kFields * e];
    ConnectionFlow& f = out[e];
    f.bytes = b[0];
    f.messages = b[1];
    f.packets = b[2];
    f.retransmitted = b[3];
    f.ecn_marked = buf[kFields * nic::peer_endpoint(static_cast<std::uint32_t>(e)) + 4];
    f.first_post_ps = minus1(b[5]);
    f.first_byte_ps = minus1(b[6]);
    f.last_done_ps = minus1(b[7]);
  }
  return out;
}

}  // namespace

CollectiveResult CollectiveCore::result(pdes::Sync& sync) const {
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
  r.flows = gather_flows(flows_, ecn_in_, sync);
  return r;
}

}  // namespace stepsim::collective
