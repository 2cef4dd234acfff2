#pragma once
/// The communication a layer's passes and the pipeline need (Megatron-LM's): TP all-reduces
/// (or all-gather + reduce-scatter with sequence parallelism), CP's K and V gather, EP's
/// all-to-alls, and the pipeline send's size. What each collective costs is the CommModel's.

#include <cstdint>
#include <vector>

#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/pipeline_schedule.hpp"
#include "stepsim/workload/placement.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// The TP, CP and EP collectives of one layer's forward or backward pass on `stage`, in the
/// order they block the compute stream (free ones included: a group of one GPU moves nothing).
/// A dense layer (`moe_layer` false: an MoE model's dense_layers) has no all-to-alls.
std::vector<CommOp> layer_collectives(const Scenario& s, const Placement& place, int stage,
                                      PassKind kind, bool moe_layer = true);

/// Bytes of one pipeline send: a micro-batch's bf16 activations divided by TP (Megatron-LM's
/// scatter-gather).
std::int64_t pipeline_send_bytes(const Scenario& s);

}  // namespace stepsim::workload
