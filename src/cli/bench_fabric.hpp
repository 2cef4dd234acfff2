#pragma once
// `stepsim bench fabric`: traffic patterns over a topology at packet level (raw flows, or RDMA
// WRITEs through the NICs and the RC transport with congestion control), printing
// packet-hops per second, wall time, peak memory, FCTs and what the fabric did (drops, ECN
// marks, PAUSE frames, path balance) and the digest.

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>
#include "src/cli/report.hpp"

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/fabric/traffic.hpp"
#include "stepsim/pdes/engine.hpp"

namespace stepsim::cli {

class BenchFabricCommand {
 public:
  explicit BenchFabricCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);

 private:
  struct RdmaSetup;
  /// What the options give beyond the members they fill.
  struct Inputs {
    SimTime end;
    SimTime sample_interval;
  };
  void add_transport_options();
  /// Checks the outputs (collective), parses the options into traffic_, params_ and `in`.
  Result<bool> parse_inputs(int rank, Inputs& in);
  /// The memory estimate (collective), the faults and the switch buffer against `topo`.
  Result<bool> check_topology(const topology::Topology& topo, int ranks);
  /// --repeat runs (the first one sampled with --samples); stops at one that did not complete.
  Result<std::vector<fabric::FabricRun>> run_repeats(const topology::Topology& topo,
                                                     const std::vector<fabric::Flow>& flows,
                                                     const RdmaSetup& rdma, pdes::Sync& sync,
                                                     const pdes::EngineOptions& opts,
                                                     SimTime sample_interval);
  /// Shorthands, --set fabric.* and the fidelity into params_; the error names the option.
  Result<bool> configure_fabric();
  /// The NIC parameters and one connection + transfer per flow (--transport rdma).
  Result<bool> configure_rdma(const std::vector<fabric::Flow>& flows, RdmaSetup& rdma);
  void print_report(const topology::Topology& topo, std::size_t flows,
                    const std::vector<fabric::FabricRun>& runs, const fabric::FabricRun& run,
                    int ranks, std::int64_t rss_before) const;
  static void print_fabric_lines(const fabric::FabricSummary& s);
  int write_json_report(int rank, const topology::Topology& topo, std::size_t flows,
                        const std::vector<fabric::FabricRun>& runs, const fabric::FabricRun& run,
                        int ranks) const;
  /// What --samples wrote (rank 0 prints it).
  struct SamplesReport {
    std::uint64_t rows = 0;
    std::uint64_t appends = 0;
    std::uint64_t batch_bins = 0;
    double hook_s = 0;  ///< rank 0's time in the window hook (draining and writing)
  };
  SamplesReport samples_report_;
  std::optional<Error> samples_error_;  // --samples could not be written (a full disk)

  CLI::App* cmd_;
  std::string topology_;
  fabric::TrafficSpec traffic_;
  fabric::FabricParams params_;
  std::string entropy_ = "udp_sport";
  std::string flow_bytes_ = "2000000";
  std::string window_ = "0";
  FidelityOptions fidelity_;  // packet or cell
  std::string end_ = "100ms";
  std::vector<std::string> faults_;
  // Shorthand options of fabric.* keys by option name: values (--lb, --mtu, ...) and flags
  // (--no-pfc, ...).
  std::map<std::string, std::string> shorthand_values_;
  std::map<std::string, bool> shorthand_flags_;
  int threads_ = 1;
  int repeat_ = 1;
  std::string partition_ = "metis";
  std::string transport_ = "raw";
  std::string cc_ = "dcqcn";
  std::string retransmission_ = "auto";
  std::string kind_ = "roce";  ///< transport.kind, after configure_rdma
  std::string message_ = "1MiB";
  std::string nic_config_;
  std::vector<std::string> sets_;
  std::string json_path_;
  std::string samples_path_;
  std::string sample_interval_ = "10us";
  bool quiet_ = false;
};

}  // namespace stepsim::cli
