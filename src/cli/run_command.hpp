#pragma once
// `stepsim run SCENARIO.yaml`: one training step of the scenario's model on its topology;
// prints step time, MFU, where the time went, busbw per communication group and what the fabric
// saw, and the digest; --json writes the same summary.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace stepsim::cli {

class RunCommand {
 public:
  explicit RunCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  std::string scenario_;
  std::vector<std::string> sets_;
  std::string fidelity_;
  int threads_ = 1;
  std::string partition_ = "metis";
  std::string json_path_;
  std::string output_;  // HDF5 file; default: the scenario's stem + .h5
  bool no_output_ = false;
  std::string trace_;  // Chrome/Perfetto trace JSON
  bool quiet_ = false;
};

}  // namespace stepsim::cli
