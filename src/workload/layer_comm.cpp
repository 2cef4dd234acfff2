// The collectives of a layer's passes (see layer_comm.hpp). TP, CP and EP collectives block
// the compute stream; with parallel.tp_overlap the TP ones carry the GEMM they run beside
// (CommOp::overlap_s, from layer_costs).
#include "stepsim/workload/layer_comm.hpp"

#include "src/workload/moe/moe_dispatcher.hpp"
#include "src/workload/moe/routing.hpp"
#include "stepsim/workload/compute_cost.hpp"

namespace stepsim::workload {

using collective::Kind;

namespace {

// Megatron's MoE parallel folding with parallel.etp other than tp: an MoE layer's FFN pair of
// TP collectives (ops[2], ops[3]) runs over the expert-TP group instead, on the etp GPUs'
// tokens (etp / tp of the micro-batch's), and none with etp 1.
void expert_tp_collectives(const Scenario& s, const Placement& place, int stage, bool fwd,
                           std::vector<CommOp>& ops) {
  const Parallelism& p = s.par;
  const std::size_t attn = p.tp > 1 ? (p.sequence_parallel ? 2 : 1) : 0;
  ops.resize(attn);
  if (p.expert_tp() == 1) return;
  const std::int64_t act =
      p.micro_batch * s.model.seq_len / p.cp * s.model.hidden * 2 * p.expert_tp() / p.tp;
  const std::vector<std::uint32_t> g = place.etp_group(stage, p.expert_tp());
  if (p.sequence_parallel) {
    ops.push_back({fwd ? Kind::kAllGather : Kind::kReduceScatter, act, g, CommGroup::kTp});
    ops.push_back({fwd ? Kind::kReduceScatter : Kind::kAllGather, act, g, CommGroup::kTp});
  } else {
    ops.push_back({Kind::kAllReduce, act, g, CommGroup::kTp});
  }
}

}  // namespace

std::vector<CommOp> layer_collectives(const Scenario& s, const Placement& place, int stage,
                                      PassKind kind, bool moe_layer) {
  const ModelSpec& m = s.model;
  const Parallelism& p = s.par;
  const bool fwd = kind == PassKind::kForward;
  const std::int64_t T = p.micro_batch * m.seq_len / p.cp;
  const std::int64_t act = T * m.hidden * 2;  // bf16 activations of the micro-batch
  std::vector<CommOp> ops;
  const bool moe = m.experts > 0 && moe_layer;
  if (p.tp > 1) {
    const std::vector<std::uint32_t> tp = place.tp_group(stage);
    for (int i = 0; i < 2; ++i) {
      if (p.sequence_parallel) {
        ops.push_back({fwd ? Kind::kAllGather : Kind::kReduceScatter, act, tp, CommGroup::kTp});
        ops.push_back({fwd ? Kind::kReduceScatter : Kind::kAllGather, act, tp, CommGroup::kTp});
      } else {
        ops.push_back({Kind::kAllReduce, act, tp, CommGroup::kTp});
      }
    }
    if (p.tp_overlap && p.sequence_parallel) {
      const LayerCosts lc = layer_costs(s, moe_layer);
      const std::array<double, 4>& hide = fwd ? lc.fwd_hide : lc.bwd_hide;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        ops[i].overlap_s = hide[i];
        ops[i].overlap_chunks = p.tp;
      }
    }
  }
  if (moe && p.expert_tp() != p.tp) expert_tp_collectives(s, place, stage, fwd, ops);
  if (p.cp > 1) {
    // bf16 K and V of every KV head (MLA: each head's, after the up projection).
    const std::int64_t kv =
        m.mla() ? std::int64_t{p.cp} * T * m.heads * (m.qk_dim() + m.v_dim()) * 2 / p.tp
                : std::int64_t{p.cp} * T * 2 * m.kv() * m.head_dim() * 2 / p.tp;
    ops.push_back(
        {fwd ? Kind::kAllGather : Kind::kReduceScatter, kv, place.cp_group(stage), CommGroup::kCp});
  }
  if (m.experts > 0 && moe_layer && p.ep > 1) {
    // The busiest receiver's tokens (moe.routing): every GPU of the group sends that many, so
    // the busiest receiver's NICs and NVLink carry what they do under the routing.
    const MoeTokens tokens{static_cast<double>(T) * moe_load(s).tokens / p.tp, m.hidden,
                           m.precision == "fp8" && s.moe.fp8_dispatch};
    const MoeDispatcher* d = find_moe_dispatcher(s.moe.dispatcher);
    for (const CommOp& op : d->ops(tokens, s, place.ep_group(stage, p.expert_tp(), p.ep), fwd)) {
      ops.push_back(op);
    }
  }
  return ops;
}

std::int64_t pipeline_send_bytes(const Scenario& s) {
  const Parallelism& p = s.par;
  return p.micro_batch * s.model.seq_len / p.cp * s.model.hidden * 2 / p.tp;
}

}  // namespace stepsim::workload
