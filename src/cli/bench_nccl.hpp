#pragma once
// `stepsim bench nccl allreduce|allgather|reducescatter|alltoall|broadcast|reduce`: nccl-tests
// on the simulated GPUs, NICs and fabric: for each size from -b to -e (factor -f) one collective
// over --gpus GPUs, printing nccl-tests' columns (size, count, type, redop, root, time, algbw,
// busbw) and the digest.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>
#include "src/cli/report.hpp"

namespace stepsim::cli {

class BenchNcclCommand {
 public:
  explicit BenchNcclCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  std::string kind_;
  std::string topology_;  // default: the source tree's topologies/rail-128gpu-800g.yaml
  std::string min_bytes_ = "8";
  std::string max_bytes_ = "128MiB";
  double factor_ = 2;
  int gpus_ = 16;
  int root_ = 0;
  std::string algo_ = "ring";
  std::string gpu_ = "h100";
  std::string proto_ = "simple";
  int channels_ = 8;
  std::string cc_ = "none";
  std::string lb_ = "ecmp";
  FidelityOptions fidelity_;
  std::string nic_config_;
  std::vector<std::string> sets_;
  std::string end_ = "10s";
  int threads_ = 1;
  std::string partition_ = "metis";
  std::string json_path_;
  bool quiet_ = false;
};

}  // namespace stepsim::cli
