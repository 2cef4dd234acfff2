#pragma once
/// What a GPU's compute costs in the step: a roofline per layer and pass (GEMM and attention
/// FLOPs at the GPU's peak x gemm efficiency, elementwise HBM traffic at HBM x memory
/// efficiency, a launch overhead), the output layer, recomputation, the parameters a GPU holds
/// and the optimizer's HBM-bound update. tests/unit/workload/compute_cost_test.cpp checks the
/// formulas.

#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// The costs of one layer on one GPU, per micro-batch (seconds).
struct LayerCosts {
  double fwd_s = 0;         ///< forward compute
  double bwd_s = 0;         ///< backward compute (twice the forward's work)
  double recompute_s = 0;   ///< added to the backward by recomputation (full: a forward;
                            ///< selective: the attention core)
  double logits_fwd_s = 0;  ///< the output layer (last chunk of the last stage)
  double logits_bwd_s = 0;
};

/// The roofline costs of one layer of `s`'s model on one GPU.
LayerCosts layer_costs(const Scenario& s);

/// Compute time of one layer's forward or backward pass on virtual stage (`stage`, `chunk`);
/// `layer` is the index within the chunk. Selective recomputation is in the backward, the
/// output layer in the last layer of the last virtual stage. Full recomputation's extra forward
/// is not (it runs first, with its collectives: `LayerCosts::recompute_s`).
double layer_pass_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                          int stage, int chunk, PassKind kind, int layer);

/// Parameters of one layer on one GPU: dense (attention, and the FFN of a dense model) and
/// expert parts (reduced over the expert-data-parallel group).
struct LayerParams {
  double dense = 0;
  double expert = 0;
};
LayerParams layer_params(const Scenario& s);

/// Embedding parameters on virtual stage (`stage`, `chunk`): the input embedding on the first,
/// the output layer on the last unless tied.
double embedding_params(const Scenario& s, const PipelineShape& shape, int stage, int chunk);

/// Gradient bytes one layer (index `layer` within chunk `chunk`) hands to the data-parallel
/// buckets: dense (with the chunk's embeddings on its first layer) and expert.
LayerParams layer_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk, int layer);

/// Parameters one GPU of `stage` holds: its layers of every chunk and its embeddings.
double stage_params(const Scenario& s, const PipelineShape& shape, int stage);

/// The optimizer step over `params` parameters (the GPU's shard): HBM bound, plus a launch.
double optimizer_seconds(const Scenario& s, double params);

}  // namespace stepsim::workload
