// The compute-only lower bound on a step (see step_bound.hpp).
#include "src/plan/step_bound.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "stepsim/gpu/gpu_spec.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/layer_comm.hpp"
#include "stepsim/workload/model.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/placement.hpp"

namespace stepsim::plan {
namespace {

using workload::LayerCosts;
using workload::PassKind;
using workload::PipelineShape;

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

// The compute a layout's passes add to a stage's clock whatever the collectives cost.
class PassCompute {
 public:
  PassCompute(const workload::Scenario& s, workload::CommModel* comm)
      : s_(s),
        shape_(workload::pipeline_shape(s)),
        lc_{workload::layer_costs(s, false), workload::layer_costs(s, true)} {
    // Megatron's TP overlap: the GEMMs beside a layer's TP collectives run on the compute
    // stream whatever the collective costs (CommOp::overlap_s, the same for every stage).
    const workload::Placement place{s.par.tp, s.par.cp, s.par.data_parallel(), s.par.pp};
    for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
      for (const bool moe : {false, true}) {
        double sum = 0;
        if (s.par.tp > 1 && s.par.tp_overlap && s.par.sequence_parallel) {
          for (const workload::CommOp& op : workload::layer_collectives(s, place, 0, k, moe)) {
            sum += op.overlap_s;
          }
        }
        hide_[k == PassKind::kForward ? 0 : 1][moe ? 1 : 0] = sum;
      }
    }
    if (comm != nullptr) price_collectives(place, *comm);
  }

  [[nodiscard]] const PipelineShape& shape() const { return shape_; }

  // One pass of virtual stage (stage, chunk): its layers (the recomputed forward and its
  // overlapped GEMMs first under full recomputation) or, without layers, what it computes
  // beyond them.
  [[nodiscard]] double pass(int stage, int chunk, PassKind kind) const {
    const int layers = s_.model.layers;
    const int n = workload::layers_in(shape_, layers, stage, chunk);
    if (n == 0) return workload::chunk_extra_seconds(s_, lc_[0], shape_, stage, chunk, kind);
    const int first = workload::first_layer(shape_, layers, stage, chunk);
    const bool fwd = kind == PassKind::kForward;
    const bool full = !fwd && s_.par.recompute == "full";
    double dt = 0;
    for (int k = 0; k < n; ++k) {
      const std::size_t moe = s_.model.moe_layer(first + k) ? 1 : 0;
      const LayerCosts& lc = lc_[moe];
      if (full) dt += lc.recompute_s + hide_[0][moe] + exposed(0, moe, stage);
      dt += workload::layer_pass_seconds(s_, lc, shape_, stage, chunk, kind, k);
      dt += hide_[fwd ? 0 : 1][moe] + exposed(fwd ? 0 : 1, moe, stage);
    }
    return dt;
  }

  // A pass of the schedule (DualPipe's backward parts included): as run_pass computes it. The
  // weight part (W) computes alone (no recomputation, no collectives); the input part (B) takes
  // the recomputed forward and the collectives.
  [[nodiscard]] double pass_of(int stage, const workload::PipelinePass& ps) const {
    if (ps.kind == PassKind::kForward || ps.grad == workload::GradPart::kWhole) {
      return pass(stage, ps.chunk, ps.kind);
    }
    const bool weight = ps.grad == workload::GradPart::kWeight;
    const int layers = s_.model.layers;
    const int n = workload::layers_in(shape_, layers, stage, ps.chunk);
    if (n == 0) {
      return weight ? 0.0
                    : workload::chunk_extra_seconds(s_, lc_[0], shape_, stage, ps.chunk, ps.kind);
    }
    const int first = workload::first_layer(shape_, layers, stage, ps.chunk);
    double dt = 0;
    for (int k = 0; k < n; ++k) {
      const std::size_t moe = s_.model.moe_layer(first + k) ? 1 : 0;
      const LayerCosts& lc = lc_[moe];
      if (!weight) {
        if (s_.par.recompute == "full")
          dt += lc.recompute_s + hide_[0][moe] + exposed(0, moe, stage);
        dt += hide_[1][moe] + exposed(1, moe, stage);
      }
      dt += workload::backward_part_seconds(s_, lc, shape_, stage, ps.chunk, ps.grad, k);
    }
    return dt;
  }

 private:
  [[nodiscard]] double exposed(std::size_t kind, std::size_t moe, int stage) const {
    const std::vector<double>& e = exposed_[kind][moe];
    return e.empty() ? 0.0 : e[idx(stage)];
  }

  // What each stage's layer collectives leave exposed in one pass (blocking() with nothing
  // beside them): a collective of c seconds, c; under TP overlap with g seconds of GEMM beside
  // it, overlapped_seconds(c, g, chunks) - g (the g itself is in hide_). EP collectives only
  // with moe.overlap none (1f1b may run the partner's compute beside them).
  void price_collectives(const workload::Placement& place, workload::CommModel& comm) {
    const bool ep_exposed = s_.moe.overlap == "none";
    for (PassKind k : {PassKind::kForward, PassKind::kBackward}) {
      for (const bool moe : {false, true}) {
        std::vector<double>& out = exposed_[k == PassKind::kForward ? 0 : 1][moe ? 1 : 0];
        out.assign(idx(shape_.stages), 0.0);
        for (int st = 0; st < shape_.stages; ++st) {
          for (const workload::CommOp& op : workload::layer_collectives(s_, place, st, k, moe)) {
            if (op.group == workload::CommGroup::kEp && !ep_exposed) continue;
            if (op.bytes <= 0 || op.gpus.size() < 2) continue;  // free
            auto c = comm.cost(op);
            if (!c || c->stopped) {  // not priced: the compute-only bound
              for (auto& a : exposed_) {
                for (auto& b : a) b.clear();
              }
              return;
            }
            const double e = op.overlap_s > 0 ? workload::overlapped_seconds(
                                                    c->seconds, op.overlap_s, op.overlap_chunks) -
                                                    op.overlap_s
                                              : c->seconds;
            if (e > 0) out[idx(st)] += e;
          }
        }
      }
    }
  }

  const workload::Scenario& s_;
  PipelineShape shape_;
  std::array<LayerCosts, 2> lc_;  // a dense layer's, an MoE layer's
  double hide_[2][2] = {};        // [forward, backward][dense, MoE layer]
  // [forward, backward][dense, MoE layer][stage]: exposed collectives (empty without a comm).
  std::vector<double> exposed_[2][2];
};

}  // namespace

namespace {

// DualPipe: stage st holds model stage st (chunk 0, the micro-batches fed at stage 0) and model
// stage p - 1 - st (chunk 1, those fed at stage p - 1). Its first pass is a forward of one
// direction, which reads that direction's earlier model stages' forward of the same
// micro-batch: it starts no earlier than the shorter of the two chains of first forwards. From
// then on its clock moves forward by every pass of its schedule (stage_schedule: F, B, W and the
// F&B pairs, each pass's compute on the one compute stream; what runs beside an EP collective
// only hides the collective), then its optimizer.
double dualpipe_bound(const workload::Scenario& s, const PassCompute& pc) {
  const PipelineShape& shape = pc.shape();
  const int P = shape.stages;
  std::vector<double> ahead(idx(P + 1), 0.0);   // ahead[i]: chunk 0's first forwards of 0..i-1
  std::vector<double> behind(idx(P + 1), 0.0);  // behind[i]: chunk 1's of stages i..P-1
  for (int st = 0; st < P; ++st)
    ahead[idx(st + 1)] = ahead[idx(st)] + pc.pass(st, 0, PassKind::kForward);
  for (int st = P - 1; st >= 0; --st) {
    behind[idx(st)] = behind[idx(st + 1)] + pc.pass(st, 1, PassKind::kForward);
  }
  double bound = 0;
  for (int st = 0; st < P; ++st) {
    double all = 0;
    for (const workload::PipelinePass& ps : workload::stage_schedule(shape, st)) {
      all += pc.pass_of(st, ps);
    }
    const double head = std::min(ahead[idx(st)], behind[idx(st + 1)]);
    const double opt = workload::optimizer_seconds(s, workload::stage_params(s, shape, st));
    bound = std::max(bound, head + all + opt);
  }
  return bound;
}

}  // namespace

double step_lower_bound(const workload::Scenario& s, workload::CommModel* comm) {
  // The schedules whose passes and sends the bound follows (stage_schedule's 1F1B and
  // interleaved 1F1B, moe.overlap's extra warm-up forward included, and DualPipe's); any
  // other: no bound.
  if (s.moe.overlap == "dualpipe") return dualpipe_bound(s, PassCompute(s, comm)) * (1 - 1e-9);
  if (s.moe.overlap != "none" && s.moe.overlap != "1f1b") return 0;
  const PassCompute pc(s, comm);
  const PipelineShape& shape = pc.shape();
  const int P = shape.stages;
  const int V = shape.chunks;
  const double m = shape.micro_batches;
  std::vector<double> end(idx(P));   // the end of each stage's last pass, at least
  std::vector<double> last(idx(P));  // its last pass: the backward of chunk 0
  double head = 0;                   // micro-batch 0's first forward reaching the stage
  for (int st = 0; st < P; ++st) {
    double all = 0;
    for (int c = 0; c < V; ++c)
      all += pc.pass(st, c, PassKind::kForward) + pc.pass(st, c, PassKind::kBackward);
    end[idx(st)] = head + m * all;
    last[idx(st)] = pc.pass(st, 0, PassKind::kBackward);
    head += pc.pass(st, 0, PassKind::kForward);
  }
  // A stage's last pass reads the next stage's last pass (the gradient of the same micro-batch).
  for (int st = P - 2; st >= 0; --st) {
    end[idx(st)] = std::max(end[idx(st)], end[idx(st + 1)] + last[idx(st)]);
  }
  double bound = 0;
  for (int st = 0; st < P; ++st) {
    const double opt = workload::optimizer_seconds(s, workload::stage_params(s, shape, st));
    bound = std::max(bound, end[idx(st)] + opt);
  }
  return bound * (1 - 1e-9);
}

Outcome bound_outcome(const workload::Scenario& s, double step_s) {
  Outcome o;
  o.step_s = step_s;
  if (step_s <= 0) return o;
  const double tokens = static_cast<double>(s.par.global_batch) * s.model.seq_len;
  o.tokens_per_s_per_gpu = tokens / step_s / s.par.world();
  o.mfu = workload::mfu(s.model.model_flops_per_token() * tokens, step_s, s.par.world(),
                        gpu::peak_flops(s.gpu, s.model.precision));
  return o;
}

}  // namespace stepsim::plan
