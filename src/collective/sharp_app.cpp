// SHARP AllReduce on the GPUs (CollNet in NCCL's terms), the host side of sharp.hpp:
// 1. inside each server, a reduce-scatter over NVLink leaves GPU l with the server's sum of
//    shard l (S / GPUs per server), chunk by chunk;
// 2. GPU l's NIC streams the shard up aggregation tree l (one per rail) in packets, at most
//    coll.sharp.window bytes ahead of the results coming back down;
// 3. each chunk of the result that is back is all-gathered over NVLink to the server's GPUs.
// The network steps (up, down) each pay NCCL's per-hop network overhead, like a ring's step.
// Each NIC sends and receives S / GPUs per server, where a ring sends 2(n-1)/n of that.
#include <algorithm>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

std::int64_t CollectiveApp::sharp_packet_bytes(std::int64_t i) const {
  return std::clamp<std::int64_t>(seg_ - i * p_.sharp_payload, 0, p_.sharp_payload);
}

std::int64_t CollectiveApp::sharp_chunk_bytes(std::int64_t c) const {
  const std::int64_t chunk = sharp_chunk_ * p_.sharp_payload;
  return std::clamp<std::int64_t>(seg_ - c * chunk, 0, chunk);
}

void CollectiveApp::sharp_start(nic::Verbs& v) {
  const std::int64_t peers = std::int64_t{comm_.gpus_per_server} - 1;
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) {
    if (comm_.gpus[g].server != v.server()) continue;
    SharpGpu& s = sharp_gpu_[g];
    // Reduce-scatter: GPU g sends each peer its part of every chunk (the peers do the same).
    for (std::int64_t c = 0; c < sharp_chunks_; ++c) {
      const std::int64_t wire = static_cast<std::int64_t>(
          static_cast<double>(sharp_chunk_bytes(c) * peers) * p_.wire_factor() + 0.5);
      // Then the network proxy's per-step overhead, as for any network step.
      s.ready[static_cast<std::size_t>(c)] =
          (peers > 0 ? nvlink_hop(g, v.now(), wire) + p_.hop_overhead(true) : v.now()) +
          p_.hop_overhead(false);
    }
    s.done = v.now();
    if (sharp_packets_ == 0) gpu_done_ps_[g] = v.now().picoseconds();
    sharp_send(v, g);
  }
}

void CollectiveApp::sharp_send(nic::Verbs& v, std::uint32_t g) {
  SharpGpu& s = sharp_gpu_[g];
  const std::uint32_t tree = comm_.gpus[g].local;
  while (s.sent < sharp_packets_ && s.sent < s.back + sharp_window_) {
    const SimTime ready = s.ready[static_cast<std::size_t>(s.sent / sharp_chunk_)];
    if (ready > v.now()) {
      if (!s.timer) {
        s.timer = true;
        v.schedule(ready - v.now(), kTagSharp | g);
      }
      return;
    }
    const std::int64_t payload = sharp_packet_bytes(s.sent);
    fabric::Packet pkt;
    pkt.flow = tree;
    pkt.seq = static_cast<std::uint32_t>(s.sent);
    pkt.bytes = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
    pkt.op = fabric::kOpInNetworkUp;
    pkt.flags = fabric::kInNetwork;
    pkt.prio = p_.prio;
    v.send_in_network(comm_.gpus[g].nic, pkt);
    network_bytes_[g] += static_cast<std::uint64_t>(payload);
    ++s.sent;
  }
}

void CollectiveApp::on_in_network(nic::Verbs& v, topology::PortId nic, const fabric::Packet& pkt) {
  (void)nic;
  STEPSIM_CHECK(sharp_ && pkt.op == fabric::kOpInNetworkDown,
                "collective: an in-network packet outside a SHARP collective");
  const std::uint32_t g = server_rank_of_node_[v.server()] * comm_.gpus_per_server + pkt.flow;
  SharpGpu& s = sharp_gpu_[g];
  ++s.back;
  const std::int64_t c = std::int64_t{pkt.seq} / sharp_chunk_;
  std::int64_t& got = s.got[static_cast<std::size_t>(c)];
  got += sharp_packet_bytes(pkt.seq);
  if (got == sharp_chunk_bytes(c)) {
    // All-gather of the chunk: GPU g sends its reduced part to every peer.
    const std::int64_t peers = std::int64_t{comm_.gpus_per_server} - 1;
    const std::int64_t wire =
        static_cast<std::int64_t>(static_cast<double>(got * peers) * p_.wire_factor() + 0.5);
    const SimTime back = v.now() + p_.hop_overhead(false);  // the receiving proxy's overhead
    const SimTime at = peers > 0 ? nvlink_hop(g, back, wire) + p_.hop_overhead(true) : back;
    s.done = std::max(s.done, at);
  }
  if (s.back == sharp_packets_) gpu_done_ps_[g] = s.done.picoseconds();
  sharp_send(v, g);
}

}  // namespace stepsim::collective
