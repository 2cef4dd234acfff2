#pragma once
// `stepsim bench perftest write_lat|write_bw|send_lat|read_bw`: perftest (ib_write_lat, ...)
// between two NIC ports of a topology, on the simulated NICs, transport and fabric. It takes
// perftest's flags and defaults and prints its blocks: the test's parameters, then for
// bandwidth tests "#bytes #iterations BW peak BW average MsgRate" and for latency tests
// "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"; below the closing line,
// what the NICs, transport and fabric did, and the digest.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "src/cli/report.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/nic/perftest.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::cli {

/// perftest's own flags, with its defaults.
struct PerftestFlags {
  std::string size;            ///< -s (default: 65536 for bandwidth tests, 2 for latency tests)
  bool all = false;            ///< -a: 2 B .. 8 MiB in powers of two
  int qps = 1;                 ///< -q
  int iterations = 0;          ///< -n (default: 5000 for bandwidth tests, 1000 for latency tests)
  int tx_depth = 128;          ///< -t
  std::string mtu = "4096";    ///< -m
  std::string inline_size;     ///< -I (default: 220 B for latency tests, 0 for bandwidth tests)
  bool report_gbits = false;   ///< --report_gbits: Gb/s instead of MB/s (2^20 B/s)
  bool cpu_freq = false;       ///< -F: no CPU frequency warning (the simulation has none)
  std::string duration;        ///< -D: seconds (perftest's), or a time with a unit (20us)
  bool bidirectional = false;  ///< -b: bandwidth tests, both ways
  std::string device;          ///< -d mlx5_N: NIC N where --from/--to give no NIC
  int gid_index = 0;           ///< -x (RoCE's GID index: accepted, no effect)
  std::string connection = "RC";  ///< -c: only RC is modelled
  std::string output;  ///< --output bandwidth|message_rate|latency: print that number only
  // Accepted with a note (nothing of theirs is modelled), or honoured as said.
  bool rdma_cm = false;         ///< -R
  int port = 18515;             ///< -p
  int ib_port = 1;              ///< -i
  int post_list = 1;            ///< -l
  int cq_mod = 100;             ///< -Q
  bool no_peak = false;         ///< -N: honoured (BW peak printed as 0)
  bool report_both = false;     ///< -U
  bool histogram = false;       ///< -H
  bool events = false;          ///< -e
  bool cycles = false;          ///< -C
  int sl = 0;                   ///< -S
  int tos = -1;                 ///< -T
  int qp_timeout = -1;          ///< -u: honoured, transport.rto = 4.096 us x 2^u
  std::string use_cuda;         ///< --use_cuda: honoured, GPUDirect buffers
  bool run_infinitely = false;  ///< --run_infinitely
  std::string server;           ///< the server's address: accepted and ignored (--to is it)
};

/// stepsim's options of the benchmark: where it runs and what is simulated.
struct PerftestSimOptions {
  std::string topology;  ///< default: the source tree's topologies/toy-2server-1.6t.yaml
  std::string from = "0";
  std::string to = "1";
  std::string cc = "none";
  std::string retransmission = "auto";
  std::string lb = "ecmp";
  FidelityOptions fidelity;  // packet or cell
  std::string pcie = "auto";
  std::string memory = "host";
  std::string pcie_fault;
  std::string nic_config;
  std::vector<std::string> sets;
  std::string rto = "50us";
  std::string end = "1s";
  double ber = -1;
  bool no_pfc = false;
  std::uint32_t seed = 1;
  int threads = 1;
  std::string json_path;
  bool quiet = false;
};

class BenchPerftestCommand {
 public:
  explicit BenchPerftestCommand(CLI::App& parent);
  [[nodiscard]] bool selected() const { return cmd_->parsed(); }
  int execute(int rank, int ranks);
  struct Setup;   ///< the parsed command: parameters, topology, ports, sizes
  struct Totals;  ///< what the sizes added up to

 private:
  void add_perftest_flags();
  void add_accepted_flags();
  [[nodiscard]] std::vector<std::string> notes() const;
  void add_sim_options();
  /// The setup of the command line; the topology is built once its memory estimate from its
  /// counts fits `ranks` ranks (collective).
  [[nodiscard]] Result<Setup> prepare(int ranks) const;
  [[nodiscard]] Result<bool> load_parameters(Setup& s) const;
  [[nodiscard]] Result<bool> place(Setup& s) const;
  void print_preamble(const Setup& s) const;
  void print_details(const Setup& s, const Totals& t, int ranks) const;
  [[nodiscard]] int write_json_file(int rank, const Setup& s, const Totals& t) const;

  CLI::App* cmd_;
  std::string test_;
  PerftestFlags flags_;
  PerftestSimOptions sim_;
};

}  // namespace stepsim::cli
