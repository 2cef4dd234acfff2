#pragma once
// `stepsim headroom`: the PFC headroom calculator (DOMAIN.md section 3, the mlx5 formula, and a
// switch vendor's: SONiC's dynamic buffer model).

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
  // Switch side (SONiC dynamic buffer model).
  int small_packets_ = 100;
  std::string cell_factor_ = "wire";
  std::string mac_phy_ = "819";
  std::string peer_response_ = "3891";
  std::string pipeline_ = "18432";
  std::string gearbox_ = "0ns";
  int priorities_ = 2;
  int ports_ = 64;
  int shared_ratio_ = 0;
};

}  // namespace stepsim::cli
