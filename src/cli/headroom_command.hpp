#pragma once
// `stepsim headroom`: the PFC headroom calculator (DOMAIN.md section 3, and the mlx5 formula).

#include <CLI/CLI.hpp>
#include <string>

namespace stepsim::cli {

class HeadroomCommand {
 public:
  explicit HeadroomCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank);

 private:
  CLI::App* cmd_;
  std::string rate_ = "400G";
  std::string length_ = "3m";
  std::string mtu_ = "4096";
  std::string cable_ = "fiber";
  std::string per_metre_ = "5ns";
  std::string switch_delay_ = "200ns";
  std::string nic_delay_ = "200ns";
  std::string dsp_ = "125ns";
  std::string cell_ = "256";
};

}  // namespace stepsim::cli
