#pragma once
// `stepsim bench fabric`: traffic patterns over a topology at packet level (raw flows, or RDMA
// WRITEs through the NICs and the RC transport with congestion control), printing
// packet-hops per second, wall time, peak memory, FCTs and what the fabric did (drops, ECN
// marks, PAUSE frames, path balance) and the digest.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>
#include "src/cli/report.hpp"

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/traffic.hpp"

namespace stepsim::cli {

class BenchFabricCommand {
 public:
  explicit BenchFabricCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  std::string topology_;
  fabric::TrafficSpec traffic_;
  fabric::FabricParams params_;
  std::string entropy_ = "udp_sport";
  std::string flow_bytes_ = "2000000";
  std::string window_ = "0";
  std::string mtu_ = "4096";
  FidelityOptions fidelity_;  // packet or cell
  std::string end_ = "100ms";
  std::string buffer_ = "64MiB";
  std::string flowlet_timeout_ = "10us";
  double ber_ = -1;
  bool no_pfc_ = false;
  bool no_fec_ = false;
  bool no_reroute_ = false;
  std::vector<std::string> faults_;
  bool no_ecn_ = false;
  bool store_and_forward_ = false;
  int threads_ = 1;
  int repeat_ = 1;
  std::string partition_ = "metis";
  std::string transport_ = "raw";
  std::string cc_ = "dcqcn";
  std::string retransmission_ = "gbn";
  std::string message_ = "1MiB";
  std::string nic_config_;
  std::vector<std::string> sets_;
  std::string json_path_;
  bool quiet_ = false;
};

}  // namespace stepsim::cli
