#pragma once
/// Which GPU each global rank runs on (Megatron-LM's order: TP fastest, then CP, DP, PP; global
/// rank r is the topology's r-th GPU, server by server) and the communication groups of the
/// simulated pipeline (data-parallel rank 0, TP and CP rank 0) on one stage.

#include <cstdint>
#include <vector>

namespace stepsim::workload {

/// The GPU each global rank runs on and the groups the step's collectives run over.
struct Placement {
  int tp = 1, cp = 1, dp = 1, pp = 1;
  [[nodiscard]] std::uint32_t rank(int t, int c, int d, int p) const {
    return static_cast<std::uint32_t>(((p * dp + d) * cp + c) * tp + t);
  }
  /// The tensor-parallel group of `stage`.
  [[nodiscard]] std::vector<std::uint32_t> tp_group(int stage) const;
  /// The context-parallel group of `stage`.
  [[nodiscard]] std::vector<std::uint32_t> cp_group(int stage) const;
  /// Megatron's MoE parallel folding: the expert grid (expert-TP fastest, then EP, then
  /// expert-DP) over the stage's GPUs in rank order. The EP group of `stage`'s first GPU: ep
  /// GPUs, etp apart.
  [[nodiscard]] std::vector<std::uint32_t> ep_group(int stage, int etp, int ep) const;
  /// Its expert-TP group: the etp GPUs from the stage's first.
  [[nodiscard]] std::vector<std::uint32_t> etp_group(int stage, int etp) const;
  /// Its expert data-parallel group: edp GPUs, etp x ep apart.
  [[nodiscard]] std::vector<std::uint32_t> expert_dp_group(int stage, int etp, int ep,
                                                           int edp) const;
  /// `count` data-parallel ranks of `stage`, `stride` apart (EP groups, expert-DP groups).
  [[nodiscard]] std::vector<std::uint32_t> dp_group(int stage, int stride, int count) const;
};

}  // namespace stepsim::workload
