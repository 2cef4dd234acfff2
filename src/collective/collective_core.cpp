// The machinery every collective algorithm's runtime shares (see collective_core.hpp). NVLink is
// a per-GPU egress timeline (bandwidth per direction) plus a latency; the NVSwitch is not a
// bottleneck.
#include "src/collective/collective_core.hpp"

#include <algorithm>

#include "stepsim/core/fatal.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

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
  // The first server's members grouped by NIC, NICs in port order (every server is alike).
  const std::uint32_t local_n = std::min<std::uint32_t>(comm_.gpus_per_server, n);
  std::vector<topology::PortId> nics;
  for (std::uint32_t m = 0; m < local_n; ++m) {
    const topology::PortId nic = comm_.gpus[m].nic;
    const auto at = std::lower_bound(nics.begin(), nics.end(), nic);
    const auto k = static_cast<std::size_t>(at - nics.begin());
    if (at == nics.end() || *at != nic) {
      nics.insert(at, nic);
      members_by_nic_.insert(members_by_nic_.begin() + static_cast<std::ptrdiff_t>(k),
                             std::vector<std::uint32_t>());
    }
    members_by_nic_[k].push_back(m);
  }
  const auto servers = static_cast<std::size_t>(ceil_div(n_, comm_.gpus_per_server));
  fct_.resize(servers);
}

std::uint32_t CollectiveCore::rail_member(int c) const {
  const auto nics = static_cast<std::uint32_t>(members_by_nic_.size());
  const auto k = static_cast<std::uint32_t>(c);
  const std::vector<std::uint32_t>& on = members_by_nic_[k % nics];
  return on[(k / nics) % on.size()];
}

int CollectiveCore::channels_for_size(bool per_gpu) const {
  const std::int64_t split = per_gpu ? std::int64_t{n_} : 1;
  return static_cast<int>(std::clamp<std::int64_t>(spec_.bytes / (split * 65536), 1, p_.channels));
}

int CollectiveCore::ring_channels_for_size() const {
  std::int64_t min_bytes = 65536;  // Simple
  if (p_.protocol == "ll128") min_bytes = 8192;
  if (p_.protocol == "ll") min_bytes = std::int64_t{8192} * n_;
  return static_cast<int>(std::clamp<std::int64_t>(spec_.bytes / min_bytes, 1, p_.channels));
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

// A GPU's record (on the rank of its server; the defaults elsewhere).
struct GpuRecord {
  std::int64_t done_ps = -1;
  std::uint64_t nvlink_bytes = 0;
  std::uint64_t network_bytes = 0;
};
constexpr auto stat_table(std::type_identity<GpuRecord>) {
  using S = GpuRecord;
  return std::array{stat::max("done_ps", "ps", &S::done_ps),
                    stat::sum("nvlink_bytes", "B", &S::nvlink_bytes),
                    stat::sum("network_bytes", "B", &S::network_bytes)};
}

}  // namespace

CollectiveResult CollectiveCore::result(pdes::Sync& sync) const {
  const auto n = static_cast<std::size_t>(n_);
  std::vector<GpuRecord> gpus(n);
  for (std::size_t g = 0; g < n; ++g) {
    gpus[g] = GpuRecord{gpu_done_ps_[g], nvlink_bytes_[g], network_bytes_[g]};
  }
  stat::allreduce(sync, gpus);
  CollectiveResult r;
  for (const LogHistogram& h : fct_) r.message_fct.merge(h);
  std::vector<std::uint64_t> bins(r.message_fct.bins().begin(), r.message_fct.bins().end());
  sync.allreduce_sum(bins);
  std::copy(bins.begin(), bins.end(), r.message_fct.bins().begin());
  for (const GpuRecord& x : gpus) {
    r.gpu_done_ps.push_back(x.done_ps);
    r.time_ps = std::max(r.time_ps, x.done_ps);
    r.nvlink_bytes += x.nvlink_bytes;
    r.network_bytes += x.network_bytes;
  }
  // Each endpoint's flow is on its server's rank. ECN marks are counted where they arrive
  // (ecn_in_) and move to the direction that sent them.
  r.flows = flows_;
  for (std::size_t e = 0; e < r.flows.size(); ++e) r.flows[e].ecn_marked = ecn_in_[e];
  stat::allreduce(sync, r.flows);
  std::vector<std::uint64_t> marks(r.flows.size());
  for (std::size_t e = 0; e < r.flows.size(); ++e) marks[e] = r.flows[e].ecn_marked;
  for (std::size_t e = 0; e < r.flows.size(); ++e) {
    r.flows[e].ecn_marked = marks[nic::peer_endpoint(static_cast<std::uint32_t>(e))];
  }
  return r;
}

}  // namespace stepsim::collective
