// The MoE dispatchers' list (moe_dispatcher.hpp) and what they share.
#include <algorithm>

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

}  // namespace stepsim::workload
