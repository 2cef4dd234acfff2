#pragma once
// `stepsim bench perftest write_lat|write_bw|send_lat|read_bw`: perftest (ib_write_lat, ...)
// between two NIC ports of a topology, on the simulated NICs, transport and fabric; prints the
// perftest columns (bytes, iterations, latency percentiles, Gb/s, Mpps), the latency split of a
// message, what the transport and fabric did, and the digest.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>
#include "src/cli/report.hpp"

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/perftest.hpp"

namespace stepsim::cli {

class BenchPerftestCommand {
 public:
  explicit BenchPerftestCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  CLI::App* cmd_;
  std::string test_;
  std::string topology_;  // default: the source tree's topologies/toy-2server-1.6t.yaml
  std::string a_ = "0:0";
  std::string b_ = "1:0";
  std::string size_ = "2";
  bool all_ = false;
  int qps_ = 1;
  int iterations_ = 1000;
  int tx_depth_ = 128;
  std::string cc_ = "none";
  std::string retransmission_ = "gbn";
  std::string lb_ = "ecmp";
  std::string mtu_ = "4096";
  FidelityOptions fidelity_;  // packet or cell
  std::string pcie_ = "auto";
  std::string memory_ = "host";
  std::string pcie_fault_;
  std::string nic_config_;
  std::vector<std::string> sets_;
  std::string inline_ = "0";
  std::string rto_ = "50us";
  std::string end_ = "1s";
  double ber_ = -1;
  bool no_pfc_ = false;
  std::uint32_t seed_ = 1;
  int threads_ = 1;
  std::string json_path_;
  bool quiet_ = false;
};

}  // namespace stepsim::cli
