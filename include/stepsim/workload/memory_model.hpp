#pragma once
/// The HBM a training step needs on each GPU: for every pipeline stage, the most-loaded GPU's
/// model states (weights, gradients, optimizer states by precision, ZeRO stage and distributed
/// optimizer), activations (by recompute mode, FlashAttention, TP with or without sequence
/// parallelism, CP, the micro-batches the schedule keeps in flight), the embeddings, output
/// layer and logits on their stages, MoE experts and dispatch buffers, MLA latents, MTP modules,
/// FSDP's unsharded layers, and the framework's allowances (CUDA context, NCCL buffers,
/// allocator reserve). Each term's formula and source: docs/workload.md ("Memory").
///
/// estimate_memory is the capacity planner's entry point (`stepsim plan` calls it for every
/// layout it considers): a pure function of the scenario, no engine, no I/O, no topology,
/// microseconds per call. Keep its signature; extend MemoryReport rather than renaming.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// One term of a GPU's memory: its name (a static string, one of memory_term_names()) and
/// bytes.
struct MemoryTerm {
  const char* name = "";
  double bytes = 0;
};

/// The memory of the most-loaded GPU of one pipeline stage.
struct StageMemory {
  int stage = 0;
  std::vector<MemoryTerm> terms;  ///< every term, in memory_term_names() order (zeros kept)
  [[nodiscard]] double total() const;
  /// The bytes of term `name` (0 if absent).
  [[nodiscard]] double bytes(const std::string& name) const;
  /// The `n` largest terms, largest first (ties in term order).
  [[nodiscard]] std::vector<MemoryTerm> largest(std::size_t n) const;
};

struct MemoryReport {
  std::vector<StageMemory> stages;  ///< one per pipeline stage
  int peak_stage = 0;               ///< the stage with the largest total (the first of ties)
  double capacity = 0;              ///< the GPU's HBM (gpu.hbm_bytes)
  [[nodiscard]] double peak() const { return stages.empty() ? 0 : stages[peak_stage].total(); }
  [[nodiscard]] double headroom() const { return capacity - peak(); }
  [[nodiscard]] bool fits() const { return peak() <= capacity; }
};

/// The names of the terms, in report order.
const std::vector<const char*>& memory_term_names();

/// Every stage's memory for `s` (one job: a multi-job scenario's jobs via job_scenario). Pure
/// and cheap: O(stages x (stages x vpp)) arithmetic.
MemoryReport estimate_memory(const Scenario& s);

/// Activation bytes of one layer for one micro-batch on one GPU, as stored for the backward
/// under `recompute` (none, selective, full): Korthikanti et al.'s Table 2 generalized
/// (grouped-query attention, SwiGLU, MoE, MLA), FlashAttention storing no s^2 scores.
double layer_activation_bytes(const Scenario& s, bool moe_layer, const std::string& recompute);

/// The user error for a report that does not fit: the stage, its total, the capacity, the three
/// largest terms and a hint. `what` prefixes it (a job's name, or empty).
std::string memory_error(const MemoryReport& r, const std::string& what);

}  // namespace stepsim::workload
