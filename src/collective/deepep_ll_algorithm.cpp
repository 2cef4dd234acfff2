// DeepEP's low-latency kernels (the ep_dispatch_ll and ep_combine_ll kinds), as DeepEP's
// documentation describes them: pure RDMA, no forwarding. A GPU writes each token straight to
// each of its top_k experts (no deduplication per GPU or server: top_k / n of its bytes to
// every GPU) over RDMA, peers in its server over NVLink. A destination on another rail is reached
// through the source server's GPU on that rail (an NVLink hop first: the planes of a
// rail-optimized or multi-plane fabric do not meet, and the DeepSeek-V3 report forwards
// cross-plane traffic inside the node). Writes are GPU-initiated (IBGDA: no proxy), in pieces of
// coll.p2p.net_chunk with coll.slots x coll.p2p.channels_per_peer in flight per connection. The
// kernel's own time beside the transfers (launch, the per-expert counts the receivers wait for,
// packing) is coll.ep.ll_overhead, before the first write. Combine moves the same pattern at
// its own size.
#include <cmath>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

namespace {

class DeepepLlRun final : public AlgorithmRun {
 public:
  explicit DeepepLlRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

 private:
  struct Flow {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint32_t via = 0;  // the GPU whose NIC posts it (src, or its server's on dst's rail)
    std::uint32_t endpoint = 0;
    std::int64_t pieces = 0;
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t arrived = 0;
  };
  enum Event : std::uint32_t {
    kBegin = 1,  // GPU `index`'s kernel starts writing
    kArrive,     // `piece` bytes reached GPU `index` over NVLink
    kPost,       // flow `index`'s next piece crossed NVLink to its posting GPU
  };
  [[nodiscard]] std::int64_t piece_of(std::int64_t i) const {
    const std::int64_t c = core_.params().p2p_net_chunk;
    return std::clamp<std::int64_t>(per_peer_ - i * c, 0, c);
  }
  [[nodiscard]] std::int64_t rdma_bytes(std::int64_t payload) const {
    return deepep_rdma_bytes(core_, payload);
  }
  void send(nic::Verbs& v, std::uint32_t flow);
  void begin(nic::Verbs& v, std::uint32_t gpu);
  void received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes);

  std::uint32_t n_;
  std::uint32_t G_;
  std::int64_t per_peer_ = 0;
  std::vector<Flow> flows_;  // network flows
  std::vector<std::uint32_t> flow_of_endpoint_;
  std::vector<std::int64_t> expect_;
  std::vector<std::int64_t> got_;
};

DeepepLlRun::DeepepLlRun(CollectiveCore& core)
    : AlgorithmRun(core), n_(static_cast<std::uint32_t>(core.size())) {
  STEPSIM_CHECK(core_.params().p2p_channels_per_peer != CollectiveParams::kP2pAuto &&
                    core_.params().p2p_nvl_chunk != CollectiveParams::kP2pAuto,
                "deepep: coll.p2p's auto values are resolved before the run (resolve_p2p)");
  G_ = std::min(core_.comm().gpus_per_server, n_);
  const CollectiveParams& p = core_.params();
  per_peer_ = std::llround(static_cast<double>(core_.spec().bytes) * std::max(p.ep_top_k, 1) / n_);
  expect_.assign(n_, per_peer_ * n_);
  got_.assign(n_, 0);
  for (std::uint32_t s = 0; s < n_; ++s) {
    for (std::uint32_t d = 0; d < n_; ++d) {
      if (core_.gpu(s).server == core_.gpu(d).server || per_peer_ == 0) continue;
      Flow f;
      f.src = s;
      f.dst = d;
      f.pieces = ceil_div(per_peer_, p.p2p_net_chunk);
      f.via = s;
      const std::uint32_t first = s / G_ * G_;
      for (std::uint32_t k = first; k < std::min(first + G_, n_); ++k) {
        if (core_.gpu(k).local == core_.gpu(d).local) f.via = k;
      }
      f.endpoint =
          nic::endpoint_of(core_.add_connection(core_.gpu(f.via).nic, core_.gpu(d).nic), 0);
      flows_.push_back(f);
    }
  }
  flow_of_endpoint_.assign(core_.connections().size() * 2, 0);
  for (std::uint32_t i = 0; i < flows_.size(); ++i) {
    flow_of_endpoint_[flows_[i].endpoint] = i;
    flow_of_endpoint_[nic::peer_endpoint(flows_[i].endpoint)] = i;
  }
  for (std::uint32_t g = 0; g < n_; ++g) {
    if (expect_[g] == 0) core_.set_gpu_done(g, 0);
  }
}

void DeepepLlRun::start(nic::Verbs& v) {
  for (std::uint32_t g = 0; g < n_; ++g) {
    if (core_.local(v, g)) {
      core_.schedule(v, core_.params().ep_ll_overhead, TimerPayload{.event = kBegin, .index = g});
    }
  }
}

void DeepepLlRun::begin(nic::Verbs& v, std::uint32_t g) {
  if (per_peer_ == 0) return;
  received(v, g, per_peer_);  // its own experts' share
  // The network's writes first (their NVLink hops ahead of the server's own copies on the
  // GPU's NVLink egress), so the NIC starts at once.
  for (std::uint32_t fi = 0; fi < flows_.size(); ++fi) {
    if (flows_[fi].src == g) send(v, fi);
  }
  const std::int64_t chunk = core_.params().p2p_nvl_chunk;
  for (std::uint32_t d = 0; d < n_; ++d) {
    if (d == g || core_.gpu(d).server != core_.gpu(g).server) continue;
    for (std::int64_t off = 0; off < per_peer_; off += chunk) {
      const std::int64_t b = std::min(chunk, per_peer_ - off);
      const SimTime at = core_.nvlink_hop(g, v.now(), core_.wire_bytes(b));
      core_.schedule(v, at - v.now(), TimerPayload{.event = kArrive, .index = d, .piece = b});
    }
  }
}

void DeepepLlRun::send(nic::Verbs& v, std::uint32_t fi) {
  Flow& f = flows_[fi];
  const CollectiveParams& p = core_.params();
  while (f.sent < f.pieces && f.sent - f.acked < std::int64_t{p.slots} * p.p2p_channels_per_peer) {
    const std::int64_t b = piece_of(f.sent++);
    if (f.via == f.src) {
      core_.post_network(v, f.src, f.endpoint, rdma_bytes(b));
    } else {
      const SimTime at = core_.nvlink_hop(f.src, v.now(), core_.wire_bytes(b));
      core_.schedule(v, at - v.now(), TimerPayload{.event = kPost, .index = fi, .piece = b});
    }
  }
}

void DeepepLlRun::received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes) {
  got_[gpu] += bytes;
  if (got_[gpu] >= expect_[gpu] && !core_.gpu_done(gpu))
    core_.set_gpu_done(gpu, v.now().picoseconds());
}

void DeepepLlRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  switch (t.event) {
    case kBegin:
      begin(v, t.index);
      break;
    case kArrive:
      received(v, t.index, t.piece);
      break;
    case kPost:
      core_.post_network(v, flows_[t.index].via, flows_[t.index].endpoint, rdma_bytes(t.piece));
      break;
    default:
      fatal("collective: deepep_ll: unknown timer event " + std::to_string(t.event));
  }
}

void DeepepLlRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  const std::uint32_t fi = flow_of_endpoint_[endpoint];
  Flow& f = flows_[fi];
  if (c.recv) {
    received(v, f.dst, piece_of(f.arrived++));
  } else {
    ++f.acked;
    send(v, fi);
  }
}

class DeepepLl final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "deepep_ll"; }
  [[nodiscard]] std::string selected_by() const override { return "ring"; }
  [[nodiscard]] std::string description() const override {
    return "ep_dispatch_ll, ep_combine_ll: DeepEP's low-latency kernels, each token straight to "
           "each of its experts over RDMA (NVLink in the server)";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    return deepep_support({Kind::kEpDispatchLl, Kind::kEpCombineLl});
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    return deepep_tuner_cost(s, r);
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    return BoundChain{s.servers > 1 ? 1.0 : 0.0, s.servers > 1 ? 0.0 : 1.0, false};
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<DeepepLlRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kDeepepLlRegistration{[] { return std::make_unique<DeepepLl>(); }, 100};

}  // namespace stepsim::collective
