#pragma once
/// What a GPU's compute costs in the step: per layer and pass, each GEMM from its shape (tile and
/// wave quantization over the SMs, bounded by its HBM traffic), the attention core as
/// FlashAttention runs it (causal blocks skipped, the slowest context-parallel rank), elementwise
/// HBM traffic at HBM x memory efficiency and a launch overhead; the output layer,
/// recomputation, Megatron's TP communication overlap, the parameters a GPU holds and the
/// optimizer's HBM-bound update. Every assumption and its source: docs/workload.md ("Compute").
/// tests/unit/workload/compute_cost_test.cpp checks the formulas.

#include <array>

#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// The costs of one layer on one GPU, per micro-batch (seconds).
/// With Megatron's TP overlap, the GEMMs that run beside the TP collectives are not in
/// fwd_s / bwd_s / recompute_s but in fwd_hide / bwd_hide, one per TP collective of the pass in
/// layer_collectives' order (CommOp::overlap_s carries them to the executors).
struct LayerCosts {
  double fwd_s = 0;         ///< forward compute
  double bwd_s = 0;         ///< backward compute (GEMMs twice the forward's work)
  double wgrad_s = 0;       ///< of bwd_s: the weight-gradient GEMMs (DualPipe's W)
  double recompute_s = 0;   ///< added to the backward by recomputation (full: a forward;
                            ///< selective: the attention core)
  double logits_fwd_s = 0;  ///< the output layer (last chunk of the last stage)
  double logits_bwd_s = 0;
  double output_fwd_s = 0;  ///< the output layer alone (logits_* less the MTP modules)
  double output_bwd_s = 0;
  double mtp_fwd_s = 0;  ///< the MTP modules' projections and layers (without output layers)
  double mtp_bwd_s = 0;
  double attn_fwd_s = 0;  ///< the attention core's part of fwd_s (slowest CP rank)
  double attn_bwd_s = 0;
  std::array<double, 4> fwd_hide{};  ///< TP overlap: GEMM seconds beside each TP collective
  std::array<double, 4> bwd_hide{};
};

/// Seconds of one GEMM, (m x k) times (k x n), `groups` of them launched together (a grouped
/// GEMM: MoE experts), on one GPU of `s`. compute.gemm_model tiles: the output's tiles
/// (compute.gemm_tile_m x _n, the better orientation) run in waves of gpu.sms, each wave's main
/// loop at the efficiency-scaled peak, then its BF16 outputs stored at the HBM rate (the
/// epilogue); never faster than its operands' HBM traffic. flat: 2 m n k at the
/// efficiency-scaled peak. FP8 GEMMs at the FP8 peak.
double gemm_seconds(const Scenario& s, double m, double n, double k, bool fp8, double groups = 1);
/// The achieved fraction of the (BF16 or FP8) peak of that GEMM: 2 m n k groups / time / peak.
/// Below the GPU's GEMM efficiency (by K / (K + K0) on whole waves, the epilogue's share).
double gemm_achieved(const Scenario& s, double m, double n, double k, bool fp8, double groups = 1);

/// FlashAttention key blocks (query block x key block) that context-parallel rank `rank` of
/// `cp` computes for one head of a sequence of `blocks` blocks: blocks^2 / cp without a causal
/// mask; with one, query block i needs i + 1 key blocks, and ranks hold contiguous quarters
/// (`balanced` false: the last does ~(2cp-1)/cp of the average) or Megatron's load-balanced
/// chunks r and 2cp-1-r (every rank the average, blocks (blocks + 1) / (2 cp)).
double cp_attention_blocks(double blocks, int cp, int rank, bool causal, bool balanced);

/// The attention core (softmax(QK^T)V) of one micro-batch's layer on one GPU, forward, on the
/// slowest CP rank (the CP collectives wait for it). compute.attention flash: key blocks
/// (cp_attention_blocks) plus a fixed cost of one key block per query block and ring step, at
/// the attention efficiency (compute.attention_efficiency; else on Hopper cuDNN's published
/// rate, elsewhere the GEMM efficiency); formula: 4 T s h / tp FLOPs at the GEMM efficiency.
double attention_fwd_seconds(const Scenario& s);

/// A TP collective of `comm_s` beside a GEMM of `gemm_s`, both cut into `chunks` pipelined
/// pieces (Megatron / Transformer Engine's ring-exchange overlap): the pair takes
/// max(comm + gemm / chunks, comm / chunks + gemm); with gemm_s 0, comm_s.
double overlapped_seconds(double comm_s, double gemm_s, int chunks);

/// The pipeline's shape of `s`: stages, chunks, micro-batches and the uneven layout.
PipelineShape pipeline_shape(const Scenario& s);

/// The costs of one layer of `s`'s model on one GPU: an MoE layer (`moe_layer`) or a dense
/// one (the dense_layers of an MoE model; a dense model's layers either way). The output layer
/// (logits_*) includes the MTP modules.
LayerCosts layer_costs(const Scenario& s, bool moe_layer = true);

/// Compute time of one layer's forward or backward pass on virtual stage (`stage`, `chunk`),
/// without the GEMMs hidden beside TP collectives (LayerCosts::fwd_hide); `layer` is the index
/// within the chunk. Selective recomputation is in the backward, the
/// output layer in the last layer of the last virtual stage. Full recomputation's extra forward
/// is not (it runs first, with its collectives: `LayerCosts::recompute_s`).
double layer_pass_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                          int stage, int chunk, PassKind kind, int layer);

/// The same for part `grad` of a backward pass: the whole, the input gradient (B: the whole
/// less the weight-gradient GEMMs) or the weight gradient (W: LayerCosts::wgrad_s; the output
/// layer's and the routers' weight gradients stay in B).
double backward_part_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                             int stage, int chunk, GradPart grad, int layer);

/// Parameters of one layer on one GPU: dense (attention, and the FFN of a dense model) and
/// expert parts (reduced over the expert-data-parallel group).
struct LayerParams {
  double dense = 0;
  double expert = 0;
};
LayerParams layer_params(const Scenario& s, bool moe_layer = true);

/// Compute of a pass of virtual stage (`stage`, `chunk`) beyond its transformer layers: the
/// output layer and loss on the last virtual stage (with the MTP modules there, logits_*), the
/// MTP modules' layers where parallel.layout puts them apart (every head's output layer then
/// runs on the loss's stage). layer_pass_seconds adds it to the chunk's last layer; a chunk
/// without layers runs it alone.
double chunk_extra_seconds(const Scenario& s, const LayerCosts& lc, const PipelineShape& shape,
                           int stage, int chunk, PassKind kind);

/// Embedding parameters on virtual stage (`stage`, `chunk`): the input embedding on the first,
/// the output layer on the last unless tied.
double embedding_params(const Scenario& s, const PipelineShape& shape, int stage, int chunk);

/// Gradient bytes one layer (index `layer` within chunk `chunk`) hands to the data-parallel
/// buckets: dense (with the chunk's embeddings on its first layer) and expert.
LayerParams layer_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk, int layer);

/// Gradient bytes of virtual stage (`stage`, `chunk`) outside its layers (its embeddings, its
/// MTP modules): what layer_gradient_bytes puts on a chunk's first and last layer, for a chunk
/// without layers.
LayerParams extra_gradient_bytes(const Scenario& s, const PipelineShape& shape, int stage,
                                 int chunk);

/// Parameters one GPU of `stage` holds: its layers of every chunk and its embeddings.
double stage_params(const Scenario& s, const PipelineShape& shape, int stage);

/// The optimizer step over `params` parameters (the GPU's shard): HBM bound, plus a launch.
double optimizer_seconds(const Scenario& s, double params);

}  // namespace stepsim::workload
