#pragma once
// MoE dispatchers (moe.dispatcher): how an MoE layer's tokens reach their experts and come back,
// as the collectives of one pass. One file each in this folder; the list is
// dispatcher_registry.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::workload {

/// One pass's tokens on one GPU of an EP group: how many enter the layer's experts (the
/// micro-batch's tokens per GPU after TP and CP, times the capacity factor) and the hidden size.
struct MoeTokens {
  double tokens = 0;
  std::int64_t hidden = 0;
  bool fp8 = false;  ///< the model runs in FP8 (a dispatcher may send FP8 activations)
};

class MoeDispatcher {
 public:
  virtual ~MoeDispatcher() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string description() const = 0;
  /// The dispatch and the combine of one forward (`fwd`) or backward pass over `gpus`, in the
  /// order they block the compute stream.
  [[nodiscard]] virtual std::vector<CommOp> ops(const MoeTokens& t, const Scenario& s,
                                                const std::vector<std::uint32_t>& gpus,
                                                bool fwd) const = 0;
};

const MoeDispatcher& alltoall_dispatcher();
const MoeDispatcher& deepep_dispatcher();
const MoeDispatcher& deepep_ll_dispatcher();

/// Every dispatcher, in listing order.
const std::vector<const MoeDispatcher*>& moe_dispatchers();
/// The dispatcher named `name`, or null.
const MoeDispatcher* find_moe_dispatcher(const std::string& name);
/// The names, for moe.dispatcher's allowed values.
std::vector<std::string> moe_dispatcher_names();

/// DeepEP's bytes per token: FP8 with one float scale per 128 values (its dispatch in FP8), or
/// BF16.
std::int64_t deepep_token_bytes(std::int64_t hidden, bool fp8);

/// A DeepEP layer pass's two collectives, `dispatch` then `combine` (the normal or the
/// low-latency kinds): the dispatch in FP8 on the forward pass of an FP8 model, BF16 otherwise;
/// the combine BF16.
std::vector<CommOp> deepep_ops(const MoeTokens& t, const std::vector<std::uint32_t>& gpus, bool fwd,
                               collective::Kind dispatch, collective::Kind combine);

}  // namespace stepsim::workload
