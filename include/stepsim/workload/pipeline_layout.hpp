#pragma once
/// parallel.layout: a pipeline layout in Megatron-Core's notation
/// (`--pipeline-model-parallel-layout`, PipelineParallelLayerLayout): one letter per layer (E the
/// embedding, t a transformer layer, m a multi-token-prediction module, L the output layer and
/// loss), `|` between virtual stages, `x*N` a letter N times, `(...)*N` a group N times (not
/// nested), commas ignored. Virtual stage i is model chunk i / pp of pipeline stage i % pp.

#include <string>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim::workload {

/// What one virtual stage holds.
struct LayoutStage {
  int layers = 0;          ///< transformer layers (t)
  int mtp = 0;             ///< MTP modules (m)
  bool embedding = false;  ///< E
  bool loss = false;       ///< L
};

/// The virtual stages of `text`, in virtual-stage order. A syntax error names the position
/// (1-based, in `text`) and what was expected there.
Result<std::vector<LayoutStage>> parse_pipeline_layout(const std::string& text);

/// The checks against the model and the pipeline (Megatron-Core's validate_layer_layout, with
/// stepsim's own: E opens the first virtual stage, L closes the last): pp x vpp virtual stages,
/// one E and one L, `layers` t's, `mtp_layers` m's in one virtual stage after every t and in
/// the last model chunk of its pipeline stage. The error says what is wrong (no key prefix).
Result<bool> check_pipeline_layout(const std::string& text, const std::vector<LayoutStage>& v,
                                   int pp, int vpp, int layers, int mtp_layers);

}  // namespace stepsim::workload
