#pragma once
/// Megatron-LM's pipeline schedule as pure functions: the order of forward and backward passes
/// on each stage (1F1B, or interleaved 1F1B with several model chunks per stage, or DeepSeek's
/// DualPipe with two mirrored model stages per GPU), where each
/// pass's input comes from (the pipeline sends), and how the layers split over the virtual
/// stages. The executors run these orders; tests/unit/workload/pipeline_schedule_test.cpp checks
/// them.

#include <cstdint>
#include <vector>

namespace stepsim::workload {

/// A forward or a backward pass of one model chunk over one micro-batch.
enum class PassKind : std::uint8_t { kForward, kBackward };

/// What of a backward pass runs: all of it, or (DualPipe's zero-bubble split) the input
/// gradient B now and the weight gradient W in a later pass of its own.
enum class GradPart : std::uint8_t { kWhole, kInput, kWeight };

/// One pass on a stage's compute stream.
struct PipelinePass {
  PassKind kind = PassKind::kForward;
  int chunk = 0;  ///< model chunk (virtual stage index on this stage; DualPipe: the direction)
  int micro = 0;  ///< micro-batch (DualPipe: within its direction)
  GradPart grad = GradPart::kWhole;  ///< backward passes: the part that runs
  /// DualPipe: the chunk of the pass this one runs beside as one F&B pair (the forward first,
  /// the backward next in the schedule); -1: none.
  int partner = -1;
  bool operator==(const PipelinePass&) const = default;
};

/// The pipeline's dimensions.
struct PipelineShape {
  int stages = 1;         ///< pp
  int chunks = 1;         ///< vpp: model chunks per stage (interleaved when > 1)
  int micro_batches = 1;  ///< per step in each pipeline
  /// Uneven layouts (Megatron-LM's decoder_first/last_pipeline_num_layers): layers of the first
  /// and of the last virtual stage, the others splitting the rest evenly; 0: the default split.
  int first_layers = 0;
  int last_layers = 0;
  /// parallel.layout: the transformer layers of each virtual stage (index chunk x stages +
  /// stage); empty: the split above. Replaces first_layers / last_layers.
  std::vector<int> layout{};
  /// The virtual stage of the MTP modules; -1: the last.
  int mtp_virtual = -1;
  /// Forward passes added to every stage's warm-up: 1 with moe.overlap 1f1b and vpp > 1
  /// (Megatron-Core's interleaved schedule adds one so that each steady-state forward and
  /// backward are independent).
  int extra_warmup = 0;
  /// moe.overlap dualpipe (DeepSeek-V3 report, section 3.2.1): every stage holds two chunks,
  /// model stage `stage` (chunk 0, fed at stage 0) and model stage stages - 1 - stage (chunk 1,
  /// fed at the last stage); each direction takes half of the micro-batches. chunks is 2.
  bool dualpipe = false;
};

/// The model's virtual stage that chunk `chunk` of `stage` runs: chunk x stages + stage, with
/// DualPipe stage (chunk 0) or stages - 1 - stage (chunk 1).
int virtual_stage(const PipelineShape& shape, int stage, int chunk);
/// Micro-batches each chunk runs per step: all, DualPipe half (one direction's).
int chunk_micro_batches(const PipelineShape& shape);

/// Forward passes a stage runs before its first backward (the cool-down runs as many
/// backwards after its last forward): p - s - 1, interleaved (p - s - 1) x 2 + (vpp - 1) x p;
/// at most every pass.
int warmup_passes(const PipelineShape& shape, int stage);

/// The passes of `stage` in the order it runs them: the warm-up forwards, then one forward and
/// one backward alternately, then the cool-down backwards. Interleaved: chunks rotate every
/// `stages` micro-batches, backwards in reverse chunk order (Megatron-LM's order). DualPipe:
/// dualpipe_schedule.
std::vector<PipelinePass> stage_schedule(const PipelineShape& shape, int stage);

/// DualPipe's order on `stage` (deepseek-ai/DualPipe's eight steps): forwards of chunk 0, then
/// of both chunks, the zero-bubble B W F of chunk 1, the steady state of F&B pairs (a forward
/// of one direction beside a backward of the other), then backwards, the deferred W passes
/// last. Mirrored stages (s and stages - 1 - s) run the same order with the chunks swapped.
/// Needs stages even and micro_batches even, at least 2 x stages.
std::vector<PipelinePass> dualpipe_schedule(const PipelineShape& shape, int stage);

/// The most forwards of `stage` in flight (their activations held: run, and the backward that
/// frees them not yet), by chunk, over its schedule; a split backward frees them at its W.
std::vector<int> peak_in_flight(const PipelineShape& shape, int stage);

/// Where a pass's input is produced: the pass of the same micro-batch that hands it over.
struct PassInput {
  bool external = false;  ///< the first virtual stage's forward reads the batch: no producer
  int stage = 0;
  int chunk = 0;
  PassKind kind = PassKind::kForward;
};

/// The producer of the input of pass (`kind`, `chunk`) on `stage`: the previous virtual
/// stage's forward, the next virtual stage's backward, or, for the last virtual stage's
/// backward, its own forward. A producer on another stage means a pipeline send. DualPipe's
/// chunk 1 runs the other way (its previous virtual stage is on stage + 1).
PassInput input_of(const PipelineShape& shape, int stage, PassKind kind, int chunk);

/// Layers of virtual stage (`stage`, `chunk`) of a `layers`-layer model. When stages x chunks
/// does not divide the layers, the first and last virtual stages (which also hold the embedding
/// and the output layer) get one fewer each, as Llama 3 405B's 126 layers ran on 16 stages.
/// With shape.first_layers / last_layers, those virtual stages hold that many and the others
/// the rest evenly (validate checks that they divide).
int layers_in(const PipelineShape& shape, int layers, int stage, int chunk);
/// The model index of the first layer of virtual stage (`stage`, `chunk`).
int first_layer(const PipelineShape& shape, int layers, int stage, int chunk);
/// Whether virtual stage (`stage`, `chunk`) holds the MTP modules (if the model has any): the
/// last virtual stage, or parallel.layout's m stage.
bool holds_mtp(const PipelineShape& shape, int stage, int chunk);
/// The pipeline stage of the MTP modules.
int mtp_stage(const PipelineShape& shape);
/// Whether it is the last virtual stage (the output layer and the loss).
bool holds_loss(const PipelineShape& shape, int stage, int chunk);

}  // namespace stepsim::workload
