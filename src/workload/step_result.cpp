// Names of the step's op kinds (see step_result.hpp).
#include "stepsim/workload/step_result.hpp"

namespace stepsim::workload {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kComm:
      return "comm";
    case OpKind::kWait:
      return "wait";
  }
  return "?";
}

}  // namespace stepsim::workload
