// DeepEP's normal kernels (the ep_dispatch and ep_combine kinds), as DeepEP's documentation and
// the DeepSeek-V3 report (section 3.2.2) describe them: a GPU sends each token over RDMA once
// per other server it needs (at most coll.ep.max_nodes servers), to the GPU of the same local
// index there; that GPU forwards it over NVLink to the GPUs of the token's experts in its
// server. Tokens for the GPU's own server go over NVLink directly. RDMA writes are posted by the
// GPU itself (NVSHMEM/IBGDA: no proxy thread), in pieces of coll.p2p.net_chunk with
// coll.slots x coll.p2p.channels_per_peer in flight per connection; a forwarder sends each
// piece on as it arrives, its share for each local GPU (ep_routing.hpp) on its NVLink egress.
// A GPU is done when it holds all of its tokens. Simplified: combine runs the same moves as
// dispatch at its own size (under balanced routing every NIC and NVLink carries the same bytes
// either way; the real combine crosses NVLink first, then RDMA, reducing at the forwarder).
#include <cmath>
#include <memory>
#include <utility>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "src/collective/ep_routing.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

namespace {

class DeepepRun final : public AlgorithmRun {
 public:
  explicit DeepepRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;
  void on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) override;

 private:
  // One GPU's tokens to the forwarder of its local index on another server.
  struct Flow {
    std::uint32_t src = 0;
    std::uint32_t fwd = 0;
    std::uint32_t endpoint = 0;
    std::int64_t bytes = 0;
    std::int64_t pieces = 0;
    std::int64_t sent = 0;
    std::int64_t acked = 0;
    std::int64_t arrived = 0;
  };
  enum Event : std::uint32_t { kArrive = 1 };  // `piece` bytes reached GPU `index` over NVLink

  [[nodiscard]] std::int64_t piece_of(const Flow& f, std::int64_t i) const {
    const std::int64_t c = core_.params().p2p_net_chunk;
    return std::clamp<std::int64_t>(f.bytes - i * c, 0, c);
  }
  [[nodiscard]] std::int64_t share_of(std::int64_t piece) const {
    return std::llround(static_cast<double>(piece) * ratio_);
  }
  [[nodiscard]] std::uint32_t first_of(std::uint32_t gpu) const { return gpu / G_ * G_; }
  [[nodiscard]] std::int64_t rdma_bytes(std::int64_t payload) const {
    return deepep_rdma_bytes(core_, payload);
  }
  void send(nic::Verbs& v, std::uint32_t flow);
  // GPU `from` sends `bytes` to each other GPU of its server over NVLink, in NVLink chunks, and
  // keeps its own share.
  void fan_out(nic::Verbs& v, std::uint32_t from, std::int64_t bytes);
  void received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes);

  std::uint32_t n_;
  std::uint32_t G_;
  double ratio_ = 1;        // a forwarder's share for one local GPU of what it receives
  std::int64_t local_ = 0;  // what a GPU sends each GPU of its own server (and keeps)
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> flow_of_endpoint_;
  std::vector<std::int64_t> expect_;
  std::vector<std::int64_t> got_;
};

DeepepRun::DeepepRun(CollectiveCore& core)
    : AlgorithmRun(core), n_(static_cast<std::uint32_t>(core.size())) {
  STEPSIM_CHECK(core_.params().p2p_channels_per_peer != CollectiveParams::kP2pAuto &&
                    core_.params().p2p_nvl_chunk != CollectiveParams::kP2pAuto,
                "deepep: coll.p2p's auto values are resolved before the run (resolve_p2p)");
  G_ = std::min(core_.comm().gpus_per_server, n_);
  const EpRoute r = ep_route(static_cast<int>(n_), static_cast<int>(G_), core_.params());
  const std::int64_t S = core_.spec().bytes;
  ratio_ = r.p_server > 0 ? r.p_gpu / r.p_server : 0;
  local_ = std::llround(static_cast<double>(S) * r.p_gpu);
  const auto remote = std::llround(static_cast<double>(S) * r.p_server);
  expect_.assign(n_, 0);
  got_.assign(n_, 0);
  for (std::uint32_t s = 0; s < n_; ++s) {
    for (std::uint32_t d = first_of(s); d < std::min(first_of(s) + G_, n_); ++d) {
      expect_[d] += local_;
    }
    for (std::uint32_t x = 0; x < n_; x += G_) {
      const std::uint32_t f = x + s % G_;
      if (x == first_of(s) || f >= n_ || remote <= 0) continue;
      Flow fl;
      fl.src = s;
      fl.fwd = f;
      fl.bytes = remote;
      fl.pieces = ceil_div(remote, core_.params().p2p_net_chunk);
      fl.endpoint = nic::endpoint_of(core_.add_connection(core_.gpu(s).nic, core_.gpu(f).nic), 0);
      for (std::int64_t i = 0; i < fl.pieces; ++i) {
        for (std::uint32_t d = x; d < std::min(x + G_, n_); ++d)
          expect_[d] += share_of(piece_of(fl, i));
      }
      flows_.push_back(fl);
    }
  }
  flow_of_endpoint_.assign(core_.connections().size() * 2, 0);
  for (std::uint32_t i = 0; i < flows_.size(); ++i) {
    flow_of_endpoint_[nic::peer_endpoint(flows_[i].endpoint)] = i;
    flow_of_endpoint_[flows_[i].endpoint] = i;
  }
  for (std::uint32_t g = 0; g < n_; ++g) {
    if (expect_[g] == 0) core_.set_gpu_done(g, 0);
  }
}

void DeepepRun::start(nic::Verbs& v) {
  for (std::uint32_t fi = 0; fi < flows_.size(); ++fi) {
    if (core_.local(v, flows_[fi].src)) send(v, fi);
  }
  for (std::uint32_t g = 0; g < n_; ++g) {
    if (core_.local(v, g)) fan_out(v, g, local_);
  }
}

void DeepepRun::send(nic::Verbs& v, std::uint32_t fi) {
  Flow& f = flows_[fi];
  const CollectiveParams& p = core_.params();
  while (f.sent < f.pieces && f.sent - f.acked < std::int64_t{p.slots} * p.p2p_channels_per_peer) {
    core_.post_network(v, f.src, f.endpoint, rdma_bytes(piece_of(f, f.sent++)));
  }
}

void DeepepRun::fan_out(nic::Verbs& v, std::uint32_t from, std::int64_t bytes) {
  if (bytes <= 0) return;
  received(v, from, bytes);
  const std::int64_t chunk = core_.params().p2p_nvl_chunk;
  for (std::uint32_t d = first_of(from); d < std::min(first_of(from) + G_, n_); ++d) {
    if (d == from) continue;
    for (std::int64_t off = 0; off < bytes; off += chunk) {
      const std::int64_t b = std::min(chunk, bytes - off);
      const SimTime at = core_.nvlink_hop(from, v.now(), core_.wire_bytes(b));
      core_.schedule(v, at - v.now(), TimerPayload{.event = kArrive, .index = d, .piece = b});
    }
  }
}

void DeepepRun::received(nic::Verbs& v, std::uint32_t gpu, std::int64_t bytes) {
  got_[gpu] += bytes;
  if (got_[gpu] >= expect_[gpu] && !core_.gpu_done(gpu))
    core_.set_gpu_done(gpu, v.now().picoseconds());
}

void DeepepRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  if (t.event != kArrive)
    fatal("collective: deepep: unknown timer event " + std::to_string(t.event));
  received(v, t.index, t.piece);
}

void DeepepRun::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  const std::uint32_t fi = flow_of_endpoint_[endpoint];
  Flow& f = flows_[fi];
  if (c.recv) {
    fan_out(v, f.fwd, share_of(piece_of(f, f.arrived++)));
  } else {
    ++f.acked;
    send(v, fi);
  }
}

}  // namespace

AlgorithmSupport deepep_support(std::vector<Kind> kinds) {
  AlgorithmSupport s;
  s.tuned = true;
  s.protocols = {Protocol::kSimple};
  s.kinds = std::move(kinds);
  return s;
}

std::int64_t deepep_rdma_bytes(const CollectiveCore& core, std::int64_t payload) {
  return std::llround(static_cast<double>(core.wire_bytes(payload)) /
                      core.params().ep_rdma_efficiency);
}

TunerCost deepep_tuner_cost(const CollectiveShape& s, const TunerRates& r) {
  TunerCost c;
  c.steps_inter = s.servers > 1 ? 1 : 0;
  c.steps_intra = s.servers > 1 ? 0 : 1;
  c.bandwidth = s.servers > 1 ? r.nic : r.nvlink;
  return c;
}

namespace {

class Deepep final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "deepep"; }
  [[nodiscard]] std::string selected_by() const override { return "ring"; }
  [[nodiscard]] std::string description() const override {
    return "ep_dispatch, ep_combine: DeepEP's normal kernels, each token over RDMA once per "
           "server to the GPU of its local index, then NVLink to its experts";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    return deepep_support({Kind::kEpDispatch, Kind::kEpCombine});
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    return deepep_tuner_cost(s, r);
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& s) const override {
    // One RDMA hop, then one NVLink hop.
    return BoundChain{s.servers > 1 ? 1.0 : 0.0, 1.0, false};
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<DeepepRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kDeepepRegistration{[] { return std::make_unique<Deepep>(); }, 90};

}  // namespace stepsim::collective
