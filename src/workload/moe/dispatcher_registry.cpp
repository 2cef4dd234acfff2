// The MoE dispatchers' list (moe_dispatcher.hpp) and what they share.
#include <algorithm>
#include <cmath>

#include "src/workload/moe/moe_dispatcher.hpp"

namespace stepsim::workload {

const std::vector<const MoeDispatcher*>& moe_dispatchers() {
  static const std::vector<const MoeDispatcher*> all = {
      &alltoall_dispatcher(), &deepep_dispatcher(), &deepep_ll_dispatcher()};
  return all;
}

const MoeDispatcher* find_moe_dispatcher(const std::string& name) {
  const auto& all = moe_dispatchers();
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const MoeDispatcher* d) { return d->name() == name; });
  return it == all.end() ? nullptr : *it;
}

std::vector<std::string> moe_dispatcher_names() {
  std::vector<std::string> names;
  for (const MoeDispatcher* d : moe_dispatchers()) names.push_back(d->name());
  return names;
}

std::int64_t deepep_token_bytes(std::int64_t hidden, bool fp8) {
  return fp8 ? hidden + (hidden + 127) / 128 * 4 : hidden * 2;
}

std::vector<CommOp> deepep_ops(const MoeTokens& t, const std::vector<std::uint32_t>& gpus, bool fwd,
                               collective::Kind dispatch, collective::Kind combine) {
  const auto bytes = [&](bool fp8) {
    return std::llround(t.tokens * static_cast<double>(deepep_token_bytes(t.hidden, fp8)));
  };
  return {CommOp{dispatch, bytes(fwd && t.fp8), gpus, CommGroup::kEp},
          CommOp{combine, bytes(false), gpus, CommGroup::kEp}};
}

}  // namespace stepsim::workload
