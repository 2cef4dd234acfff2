// SHARP AllReduce on the GPUs (CollNet in NCCL's terms), the host side of sharp.hpp:
// 1. inside each server, a reduce-scatter over NVLink leaves GPU l with the server's sum of
//    shard l (S / GPUs per server), chunk by chunk;
// 2. GPU l's NIC streams the shard up aggregation tree l (one per rail) in packets, at most
//    coll.sharp.window bytes ahead of the results coming back down;
// 3. each chunk of the result that is back is all-gathered over NVLink to the server's GPUs.
// The network steps (up, down) each pay NCCL's per-hop network overhead, like a ring's step.
// Each NIC sends and receives S / GPUs per server, where a ring sends 2(n-1)/n of that.
// ReduceScatter (NCCL 2.19+ CollNet with the plugin's ireducescatter) is steps 1 and 2: GPU l
// keeps its part of tree l's result, no all-gather. Simplified: the switches multicast the whole
// reduced shard down (real SHARP delivers each server its part); the extra bytes ride the down
// direction, which carries no more than the up direction did, so on full-duplex links the time
// holds, but the NICs' receive counters overstate.
// AllGather (NCCL's CollNet AllGather through the plugin's iallgather): no reduction. GPU l's NIC
// sends its own shard (S / n) up tree l once; the switches forward every shard up unreduced and
// the root multicasts each down, so NIC l of every server receives the m shards of rail l (S / G,
// its own included) and GPU l copies each chunk of them to its G - 1 peers over NVLink.
// Simplified: NCCL first scatters each GPU's input over the server's heads (S / n per GPU over
// NVLink, not modelled); a NIC's bytes are the same.
// nvls_sharp (NCCL_ALGO=NVLS on several servers, which needs CollNet): the same run with NVLink
// SHARP inside each server: step 1 is a multimem ld_reduce (the switch reads the G copies of each
// piece into its owner) and step 3 a multicast store (one copy), at gpu.nvls_efficiency of the
// copy rate; per GPU, NVLink carries (G+1)/G S against the ring-based 2(G-1)/G S.
#include <algorithm>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

namespace {

class SharpRun final : public AlgorithmRun {
 public:
  SharpRun(CollectiveCore& core, bool nvls);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_in_network(nic::Verbs& v, topology::PortId nic, const fabric::Packet& pkt) override;

 private:
  struct GpuState {
    std::int64_t sent = 0;
    std::int64_t back = 0;  // packets whose result came back
    bool timer = false;     // a wake-up for the next chunk is pending
    SimTime done;
    std::vector<SimTime> ready;     // by chunk: reduce-scatter over NVLink done
    std::vector<std::int64_t> got;  // by chunk (AllGather: by source server and chunk): bytes
    std::int64_t received = 0;      // packets down (AllGather: of every server's shard)
  };
  enum Event : std::uint32_t {
    kWake = 1,  // GPU `index`'s next chunk is reduce-scattered: it may send more
  };
  [[nodiscard]] std::int64_t packet_bytes(std::int64_t i) const {
    const std::int64_t payload = core_.params().sharp_payload;
    return std::clamp<std::int64_t>(seg_ - i * payload, 0, payload);
  }
  [[nodiscard]] std::int64_t chunk_bytes(std::int64_t c) const {
    const std::int64_t chunk = chunk_ * core_.params().sharp_payload;
    return std::clamp<std::int64_t>(seg_ - c * chunk, 0, chunk);
  }
  void send(nic::Verbs& v, std::uint32_t gpu);

  int n_;
  bool nvls_ = false;         // NVLink SHARP inside the servers (nvls_sharp)
  bool all_gather_ = true;    // AllReduce: all-gather the result; ReduceScatter: keep the part
  bool gather_ = false;       // AllGather: shards go up unreduced, every server's comes down
  std::int64_t servers_ = 1;  // in the communicator
  std::int64_t seg_ = 0;      // a GPU's shard
  std::int64_t packets_ = 0;  // per GPU
  std::int64_t chunks_ = 0;   // per GPU
  std::int64_t window_ = 1;   // packets
  std::int64_t chunk_ = 1;    // packets per chunk
  std::vector<GpuState> gpus_;
};

SharpRun::SharpRun(CollectiveCore& core, bool nvls)
    : AlgorithmRun(core),
      n_(core.size()),
      nvls_(nvls),
      all_gather_(core.spec().kind != Kind::kReduceScatter),
      gather_(core.spec().kind == Kind::kAllGather) {
  const CollectiveParams& p = core_.params();
  STEPSIM_CHECK(n_ % core_.comm().gpus_per_server == 0, "SHARP runs over whole servers");
  if (nvls_) {
    core_.set_nvlink_rate(DataRate::bps(static_cast<std::int64_t>(
        static_cast<double>(p.nvlink_payload().bits_per_second()) * p.nvls_efficiency *
        nvls_across_servers_scale(static_cast<int>(core_.comm().gpus_per_server), n_))));
  }
  servers_ = n_ / core_.comm().gpus_per_server;
  // AllGather: a GPU's own shard (nccl-tests' S is the gathered array); else the server's shard.
  seg_ = ceil_div(std::max<std::int64_t>(core_.spec().bytes, 0),
                  gather_ ? n_ : core_.comm().gpus_per_server);
  packets_ = ceil_div(seg_, p.sharp_payload);
  chunk_ = std::max<std::int64_t>(1, p.chunk / p.sharp_payload);
  chunks_ = ceil_div(packets_, chunk_);
  // AllGather: every member's packets in flight come down every NIC's link, so each GPU gets
  // window / m^2: what is in flight towards one NIC is window / m (at least m packets), over
  // the round trip's bytes at line rate for the sizes tested. Larger windows only queue in the
  // switches, and under the multicast (every copy charged to the ingress port) overrun PFC's
  // headroom: packets are dropped and the collective never completes.
  window_ = std::max<std::int64_t>(
      1, p.sharp_window / p.sharp_payload / (gather_ ? servers_ * servers_ : 1));
  STEPSIM_CHECK(servers_ * packets_ < std::int64_t{1} << 32, "SHARP: too many packets per tree");
  gpus_.resize(static_cast<std::size_t>(n_));
  for (GpuState& g : gpus_) {
    g.ready.assign(static_cast<std::size_t>(chunks_), SimTime::zero());
    g.got.assign(static_cast<std::size_t>(gather_ ? servers_ * chunks_ : chunks_), 0);
  }
}

void SharpRun::start(nic::Verbs& v) {
  const CollectiveParams& p = core_.params();
  const std::int64_t peers = std::int64_t{core_.comm().gpus_per_server} - 1;
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) {
    if (!core_.local(v, g)) continue;
    GpuState& s = gpus_[g];
    // Reduce-scatter: GPU g sends each peer its part of every chunk (the peers do the same);
    // NVLS: the switch reads the G copies of GPU g's part into g. AllGather: GPU g's own shard
    // is ready.
    for (std::int64_t c = 0; c < chunks_; ++c) {
      const std::int64_t wire = core_.wire_bytes(chunk_bytes(c) * (nvls_ ? peers + 1 : peers));
      // Then the network proxy's per-step overhead, as for any network step.
      s.ready[static_cast<std::size_t>(c)] =
          (peers > 0 && !gather_ ? core_.nvlink_hop(g, v.now(), wire) + p.hop_overhead(true)
                                 : v.now()) +
          p.hop_overhead(false);
    }
    s.done = v.now();
    if (packets_ == 0) core_.set_gpu_done(g, v.now().picoseconds());
    send(v, g);
  }
}

void SharpRun::send(nic::Verbs& v, std::uint32_t g) {
  GpuState& s = gpus_[g];
  const std::uint32_t tree = core_.gpu(g).local;
  while (s.sent < packets_ && s.sent < s.back + window_) {
    const SimTime ready = s.ready[static_cast<std::size_t>(s.sent / chunk_)];
    if (ready > v.now()) {
      if (!s.timer) {
        s.timer = true;
        core_.schedule(v, ready - v.now(), TimerPayload{.event = kWake, .index = g});
      }
      return;
    }
    const std::int64_t payload = packet_bytes(s.sent);
    fabric::Packet pkt;
    pkt.bytes = static_cast<std::uint32_t>(payload + fabric::kRoceHeaderBytes);
    pkt.in_network = 1;
    pkt.prio = core_.params().prio;
    // AllGather: the sequence number names the server too (its shard's place in the tree's).
    const std::int64_t seq =
        gather_ ? g / core_.comm().gpus_per_server * packets_ + s.sent : s.sent;
    pkt.transport =
        fabric::TransportHeader::of(SharpHeader{.tree = tree,
                                                .seq = static_cast<std::uint32_t>(seq),
                                                .op = gather_ ? kSharpGather : kSharpUp});
    v.send_in_network(core_.gpu(g).nic, pkt);
    core_.count_network(g, payload);
    ++s.sent;
  }
}

void SharpRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  STEPSIM_CHECK(t.event == kWake, "collective: sharp: unknown timer event");
  gpus_[t.index].timer = false;
  send(v, t.index);
}

void SharpRun::on_in_network(nic::Verbs& v, topology::PortId /*nic*/, const fabric::Packet& pkt) {
  const auto h = pkt.transport.as<SharpHeader>();
  STEPSIM_CHECK(h.op == kSharpDown, "collective: an in-network packet outside a SHARP collective");
  const std::uint32_t G = core_.comm().gpus_per_server;
  const std::uint32_t g = core_.server_rank(v.server()) * G + h.tree;
  GpuState& s = gpus_[g];
  // AllGather: packet i of server `from`'s shard; the window counts the GPU's own coming back.
  const std::int64_t from = gather_ ? std::int64_t{h.seq} / packets_ : 0;
  const std::int64_t i = std::int64_t{h.seq} - from * packets_;
  if (!gather_ || from == g / G) ++s.back;
  ++s.received;
  const std::int64_t c = i / chunk_;
  std::int64_t& got = s.got[static_cast<std::size_t>(from * chunks_ + c)];
  got += packet_bytes(i);
  if (got == chunk_bytes(c)) {
    // All-gather of the chunk: GPU g sends its reduced part to every peer (NVLS: stores it once,
    // the switch multicasts). ReduceScatter: GPU g keeps it.
    const CollectiveParams& p = core_.params();
    const std::int64_t peers = all_gather_ ? std::int64_t{G} - 1 : 0;
    const std::int64_t wire = core_.wire_bytes(nvls_ ? got : got * peers);
    const SimTime back = v.now() + p.hop_overhead(false);  // the receiving proxy's overhead
    const SimTime at = peers > 0 ? core_.nvlink_hop(g, back, wire) + p.hop_overhead(true) : back;
    s.done = std::max(s.done, at);
  }
  if (s.received == (gather_ ? servers_ : 1) * packets_)
    core_.set_gpu_done(g, s.done.picoseconds());
  send(v, g);
}

class Sharp final : public CollectiveAlgorithm {
 public:
  explicit Sharp(bool nvls) : nvls_(nvls) {}
  [[nodiscard]] std::string name() const override { return nvls_ ? "nvls_sharp" : "sharp"; }
  [[nodiscard]] std::string description() const override {
    return nvls_ ? "AllReduce, ReduceScatter over whole servers: NVLink SHARP inside each server, "
                   "SHARP in the switches between them (NCCL's NVLS with CollNet)"
                 : "AllReduce, ReduceScatter, AllGather over whole servers: in-network "
                   "aggregation (AllGather: multicast) on the switches (SHARP, NCCL's CollNet), "
                   "NVLink reduce-scatter and all-gather inside each server";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllReduce, Kind::kReduceScatter};
    if (!nvls_) s.kinds.push_back(Kind::kAllGather);
    s.servers = Servers::kSeveral;
    s.needs_sharp = true;
    s.needs_nvls = nvls_;
    if (nvls_) s.min_gpus_per_server = kNvlsMinGpus;
    s.protocols = {Protocol::kSimple};  // CollNet and NVLS run Simple only
    s.concurrent = false;
    s.tuned = true;  // with coll.sharp.enable (and NVLS hardware for nvls_sharp)
    s.tuned_min_gpus_per_server = nvls_ ? kNvlsTunedMinGpus : 1;
    return s;
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    // Inside the server (ring: 2(G-1)/G S per GPU for AllReduce, half for ReduceScatter; NVLS:
    // (G+1)/G S and S at the NVLS rate) overlaps the shard's trip through the tree (S/G per NIC,
    // each way once): the slower one sets the pace.
    const int G = s.gpus_per_server;
    if (s.kind == Kind::kAllGather) {
      // Each NIC sends S/n up and receives the rail's S/G; each GPU copies that to its G - 1
      // peers over NVLink ((G-1)/G S): one network step up, one down, one NVLink step.
      const double nv = (G - 1.0) / G / r.nvlink;
      return TunerCost{1, 2, busbw_factor(s.kind, s.gpus) / std::max(nv, 1.0 / G / r.nic)};
    }
    const bool ar = s.kind == Kind::kAllReduce;
    const double nv =
        nvls_ ? (ar ? G + 1.0 : G) / G /
                    (r.nvlink * r.nvls_efficiency * nvls_across_servers_scale(G, s.gpus))
              : (ar ? 2.0 : 1.0) * (G - 1) / G / r.nvlink;
    const double net = 1.0 / G / r.nic;
    return TunerCost{ar ? 2.0 : 1.0, 2, busbw_factor(s.kind, s.gpus) / std::max(nv, net)};
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& /*s*/) const override {
    return std::nullopt;  // moves less than a ring or tree
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<SharpRun>(core, nvls_);
  }

 private:
  bool nvls_;
};

}  // namespace

const AlgorithmRegistration kSharpRegistration{[] { return std::make_unique<Sharp>(false); }, 70};
const AlgorithmRegistration kNvlsSharpRegistration{[] { return std::make_unique<Sharp>(true); },
                                                   80};

}  // namespace stepsim::collective
