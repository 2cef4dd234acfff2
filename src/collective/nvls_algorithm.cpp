// NVLS AllReduce inside one server (NVLink SHARP, NCCL 2.17+): the NVSwitch reduces and
// multicasts. Reduce-scatter: the owner of a shard loads it with multimem.ld_reduce, so the
// switch reads every GPU's copy of every piece, its own included (n pieces over each GPU's
// NVLink); once all n are in, the switch hands the reduced piece to the owner. All-gather: the
// owner stores it once and the switch multicasts it. Each GPU's NVLink carries (n+1)/n S where
// the ring's carries 2(n-1)/n S, at gpu.nvls_efficiency (NCCL's Hopper constant) of the copy
// rate. Simplified: the switch's own bandwidth is not a bottleneck. Across servers: nvls_tree
// (nvls_tree_algorithm.cpp) and nvls_sharp (sharp_algorithm.cpp).
#include <algorithm>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"
#include "src/collective/collective_core.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

namespace {

class NvlsRun final : public AlgorithmRun {
 public:
  explicit NvlsRun(CollectiveCore& core);
  void start(nic::Verbs& v) override;
  void on_timer(nic::Verbs& v, const TimerPayload& t) override;

 private:
  enum Event : std::uint32_t {
    kIn = 1,  // GPU `index`'s contributions to (`channel`, `piece`) reached the switch
    kOut,     // owner `index`'s reduced piece (`channel`, `piece`) is back: multicast it
    kMc,      // a multicast piece reached GPU `index`
  };
  [[nodiscard]] std::int64_t piece_bytes(std::int64_t i) const {
    const std::int64_t chunk = core_.params().chunk;
    return std::clamp<std::int64_t>(seg_ - i * chunk, 0, chunk);
  }
  void reduced(nic::Verbs& v, const TimerPayload& t);

  int n_;
  int channels_ = 1;
  std::int64_t seg_ = 0;  // each GPU's shard of a channel
  std::int64_t pieces_ = 1;
  std::vector<int> in_;            // by channel x piece: contributions at the switch
  std::vector<std::int64_t> got_;  // by GPU: multicast pieces received
};

NvlsRun::NvlsRun(CollectiveCore& core) : AlgorithmRun(core), n_(core.size()) {
  const CollectiveParams& p = core_.params();
  core_.set_nvlink_rate(DataRate::bps(static_cast<std::int64_t>(
      static_cast<double>(p.nvlink_payload().bits_per_second()) * p.nvls_efficiency)));
  channels_ = core_.channels_for_size();
  const std::int64_t channel_bytes =
      ceil_div(std::max<std::int64_t>(core_.spec().bytes, 0), channels_);
  seg_ = ceil_div(channel_bytes, n_);
  pieces_ = std::max<std::int64_t>(1, ceil_div(seg_, p.chunk));
  in_.assign(static_cast<std::size_t>(channels_ * pieces_), 0);
  got_.assign(static_cast<std::size_t>(n_), 0);
}

void NvlsRun::start(nic::Verbs& v) {
  for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(n_); ++g) {
    if (!core_.local(v, g)) continue;
    for (int c = 0; c < channels_; ++c) {
      for (std::int64_t i = 0; i < pieces_; ++i) {
        const SimTime at = core_.nvlink_hop(g, v.now(), core_.wire_bytes(piece_bytes(i) * n_));
        core_.schedule(
            v, at - v.now(),
            TimerPayload{
                .event = kIn, .index = g, .channel = static_cast<std::uint32_t>(c), .piece = i});
      }
    }
  }
}

void NvlsRun::reduced(nic::Verbs& v, const TimerPayload& t) {
  // All n contributions in: every owner gets its reduced piece back (after the reduction in the
  // switch and the way back over NVLink, with the protocol's overhead).
  if (++in_[static_cast<std::size_t>(t.channel * pieces_ + t.piece)] < n_) return;
  const CollectiveParams& p = core_.params();
  const SimTime back = p.reduce_rate.serialization_time(Bytes(piece_bytes(t.piece) * n_)) +
                       p.nvlink_latency + p.hop_overhead(true);
  for (std::uint32_t h = 0; h < static_cast<std::uint32_t>(n_); ++h) {
    TimerPayload out = t;
    out.event = kOut;
    out.index = h;
    core_.schedule(v, back, out);
  }
}

void NvlsRun::on_timer(nic::Verbs& v, const TimerPayload& t) {
  const std::uint32_t g = t.index;
  switch (t.event) {
    case kIn:
      reduced(v, t);
      break;
    case kOut: {
      // The owner stores its reduced piece once; the switch multicasts it to the others.
      const SimTime at = core_.nvlink_hop(g, v.now(), core_.wire_bytes(piece_bytes(t.piece))) +
                         core_.params().hop_overhead(true);
      for (std::uint32_t h = 0; h < static_cast<std::uint32_t>(n_); ++h) {
        if (h != g) core_.schedule(v, at - v.now(), TimerPayload{.event = kMc, .index = h});
      }
      break;
    }
    case kMc:
      // Done when every other GPU's every piece has arrived.
      if (++got_[g] == static_cast<std::int64_t>(n_ - 1) * channels_ * pieces_) {
        core_.set_gpu_done(g, v.now().picoseconds());
      }
      break;
    default:
      fatal("collective: nvls: unknown timer event " + std::to_string(t.event));
  }
}

class Nvls final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string name() const override { return "nvls"; }
  [[nodiscard]] std::string description() const override {
    return "AllReduce in one server: NVLink SHARP, the NVSwitch reduces and multicasts";
  }
  [[nodiscard]] AlgorithmSupport support() const override {
    AlgorithmSupport s;
    s.kinds = {Kind::kAllReduce};
    s.servers = Servers::kOne;
    s.needs_nvls = true;
    s.min_gpus_per_server = kNvlsMinGpus;
    s.protocols = {Protocol::kSimple};  // NCCL runs NVLS with Simple only (tuning.cc)
    s.tuned = true;
    s.tuned_min_gpus_per_server = kNvlsTunedMinGpus;
    return s;
  }
  [[nodiscard]] TunerCost tuner_cost(const CollectiveShape& s, const TunerRates& r) const override {
    // Each GPU's NVLink carries (n+1)/n S at the NVLS rate; two NVLink steps (the reduced piece
    // back to its owner, the multicast), NCCL's intraLat for NVLS.
    const double n = s.gpus;
    const double t = (n + 1) / n / (r.nvlink * r.nvls_efficiency);
    return TunerCost{2, 0, busbw_factor(s.kind, s.gpus) / t};
  }
  [[nodiscard]] std::optional<BoundChain> bound_chain(const CollectiveShape& /*s*/) const override {
    return std::nullopt;  // moves less than a ring or tree
  }
  [[nodiscard]] std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const override {
    return std::make_unique<NvlsRun>(core);
  }
};

}  // namespace

const AlgorithmRegistration kNvlsRegistration{[] { return std::make_unique<Nvls>(); }, 50};

}  // namespace stepsim::collective
