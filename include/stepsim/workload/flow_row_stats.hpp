#pragma once
/// FlowRow's statistics (core/stat_table.hpp), named as ConnectionFlow's /flows columns: how two
/// parts of one flow combine (stat::combine; in the whole step each server holds the part it
/// saw: the sender's bytes and times, the receiver's ECN marks). The other members name the flow.

#include <array>
#include <type_traits>

#include "stepsim/core/stat_table.hpp"
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

constexpr auto stat_table(std::type_identity<FlowRow>) {
  using S = FlowRow;
  return std::array{
      stat::sum("bytes", "B", &S::bytes),
      stat::sum("messages", "", &S::messages),
      stat::sum("packets", "", &S::packets),
      stat::sum("retransmitted", "", &S::retransmitted),
      stat::sum("ecn_marked", "", &S::ecn_marked),
      stat::min("start_ps", "ps", &S::start_ps),
      stat::min("first_byte_ps", "ps", &S::first_byte_ps),
      stat::max("end_ps", "ps", &S::end_ps),
  };
}

}  // namespace stepsim::workload
