#include "src/cli/bench_perftest.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/cli/bench_output.hpp"
#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/data_dir.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/stat_json.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

struct BenchPerftestCommand::Setup {
  nic::PerftestKind kind = nic::PerftestKind::kWriteLat;
  bool latency = false;
  nic::NicParams nic;
  fabric::FabricParams fp;
  topology::Topology topo;
  topology::PortId a = 0;
  topology::PortId b = 0;
  std::string from;  // "SERVER:NIC" of a and b
  std::string to;
  int iterations = 0;
  SimTime duration;  // -D
  std::vector<std::int64_t> sizes;
  SimTime end;
  DataRate line;
};

struct BenchPerftestCommand::Totals {
  std::uint64_t digest = 0;
  bool completed = true;
  double wall = 0;
  std::uint64_t events = 0;
  nic::RdmaRun last;
  nlohmann::json rows = nlohmann::json::array();
};

namespace {

// "SERVER[:NIC]" -> the NIC's global port id.
Result<topology::PortId> parse_position(const std::string& text, const topology::Topology& topo) {
  const auto colon = text.find(':');
  const std::string server = text.substr(0, colon);
  const std::string nic = colon == std::string::npos ? "0" : text.substr(colon + 1);
  std::size_t used_s = 0;
  std::size_t used_n = 0;
  long s = -1;
  long n = -1;
  try {
    s = std::stol(server, &used_s);
    n = std::stol(nic, &used_n);
  } catch (...) {
    used_s = 0;
  }
  const auto servers = static_cast<long>(topo.server_count());
  if (used_s != server.size() || used_n != nic.size() || s < 0 || s >= servers || n < 0) {
    return Error{"'" + text + "' is not SERVER[:NIC] with SERVER in 0.." +
                 std::to_string(servers - 1)};
  }
  const auto v = static_cast<topology::NodeId>(s);
  if (n >= static_cast<long>(topo.nodes[v].port_count)) {
    return Error{"server " + server + " has NICs 0.." +
                 std::to_string(topo.nodes[v].port_count - 1)};
  }
  return topo.port_id(v, static_cast<std::uint32_t>(n));
}

// -d mlx5_N -> N.
Result<int> parse_device(const std::string& dev) {
  const std::string prefix = "mlx5_";
  if (dev.rfind(prefix, 0) != 0 || dev.size() == prefix.size() || dev.size() > prefix.size() + 4 ||
      dev.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
    return Error{"--ib-dev: '" + dev + "' is not a device (allowed: mlx5_N, N = the NIC index)"};
  }
  return std::stoi(dev.substr(prefix.size()));
}

// perftest's test names in its banner.
const char* banner(nic::PerftestKind k) {
  switch (k) {
    case nic::PerftestKind::kWriteLat:
      return "RDMA_Write Latency Test";
    case nic::PerftestKind::kWriteBw:
      return "RDMA_Write BW Test";
    case nic::PerftestKind::kSendLat:
      return "Send Latency Test";
    case nic::PerftestKind::kReadBw:
      return "RDMA_Read BW Test";
    case nic::PerftestKind::kSendBw:
      return "Send BW Test";
    case nic::PerftestKind::kReadLat:
      return "RDMA_Read Latency Test";
    case nic::PerftestKind::kAtomicBw:
      return "Atomic FETCH_AND_ADD BW Test";
    case nic::PerftestKind::kAtomicLat:
      return "Atomic FETCH_AND_ADD Latency Test";
  }
  return "";
}

constexpr const char* kRule =
    "---------------------------------------------------------------------------------------\n";

// One latency or bandwidth row with perftest's columns; returns its numbers for --json.
nlohmann::json print_row(const nic::PerftestResult& pr, std::int64_t bytes, int iterations,
                         bool latency, bool gbits, bool no_peak, const std::string& output) {
  const std::vector<std::int64_t>& s = pr.samples_ps;
  nlohmann::json row = {{"bytes", bytes},
                        {"iterations", iterations},
                        {"messages", pr.messages},
                        {"errors", pr.errors}};
  if (latency) {
    double var = 0;
    const double avg = pr.average_us();
    for (std::int64_t x : s) var += std::pow(static_cast<double>(x) * 1e-6 - avg, 2);
    const double stdev = s.empty() ? 0 : std::sqrt(var / static_cast<double>(s.size()));
    const double t_min = s.empty() ? 0 : static_cast<double>(s.front()) * 1e-6;
    const double t_max = s.empty() ? 0 : static_cast<double>(s.back()) * 1e-6;
    row.update({{"t_min_us", t_min},
                {"t_max_us", t_max},
                {"t_typical_us", pr.percentile_us(0.5)},
                {"t_avg_us", avg},
                {"t_stdev_us", stdev},
                {"t_p99_us", pr.percentile_us(0.99)},
                {"t_p999_us", pr.percentile_us(0.999)}});
    if (output == "latency") {
      std::printf("%.2f\n", pr.percentile_us(0.5));
      return row;
    }
    std::printf(
        " %-7lld %-10d       %-7.2f        %-7.2f      %-7.2f         %-7.2f        %-7.2f"
        "        %-7.2f                %-7.2f\n",
        static_cast<long long>(bytes), iterations, t_min, t_max, pr.percentile_us(0.5), avg, stdev,
        pr.percentile_us(0.99), pr.percentile_us(0.999));
    return row;
  }
  // MB/sec is 2^20 bytes per second (perftest's), Gb/sec 10^9 bits per second.
  const double unit = gbits ? 1e9 / 8 : 1048576.0;
  const double peak = no_peak ? 0.0 : pr.peak_messages_per_s() * static_cast<double>(bytes) / unit;
  const double average = pr.gbps() * 1e9 / 8 / unit;
  row.update({{"bw_peak", peak},
              {"bw_average", average},
              {"bw_unit", gbits ? "Gb/s" : "MB/s"},
              {"gbps", pr.gbps()},
              {"mpps", pr.mpps()}});
  if (output == "bandwidth" || output == "message_rate") {
    std::printf("%.2f\n", output == "bandwidth" ? average : pr.mpps());
    return row;
  }
  std::printf(" %-7lld    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n",
              static_cast<long long>(bytes), iterations, peak, average, pr.mpps());
  return row;
}

}  // namespace

BenchPerftestCommand::BenchPerftestCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "perftest",
      "perftest on the simulated RDMA NICs, transport and fabric, between two NIC ports of a "
      "topology, like ib_write_lat / ib_write_bw / ib_send_lat / ib_read_bw: perftest's flags, "
      "defaults and output blocks. Default fabric: the 1.6T two-server toy, no congestion "
      "control (perftest's idle pair; bench nccl and scenarios name theirs).");
  std::vector<std::string> names = nic::perftest_kind_names();
  const std::size_t n = names.size();
  for (std::size_t i = 0; i < n; ++i) names.push_back("ib_" + names[i]);
  cmd_->add_option("test", test_,
                   list_words(nic::perftest_kind_names()) +
                       ", or perftest's program names (ib_write_bw = write_bw). Atomics "
                       "(fetch-and-add, 8 B) run as 8-byte RDMA Reads on the wire")
      ->required()
      ->check(CLI::IsMember(names));
  cmd_->add_option("server", flags_.server,
                   "The server's address as perftest's client takes it: accepted and ignored "
                   "(a note), --to names the server's NIC");
  add_perftest_flags();
  add_accepted_flags();
  add_sim_options();
  last_value_wins(*cmd_);
}

void BenchPerftestCommand::add_perftest_flags() {
  PerftestFlags& f = flags_;
  cmd_->add_option("-s,--size", f.size,
                   "Message size (default: 65536 for bandwidth tests, 2 for latency tests); "
                   "64K = 65536 as perftest reads it, or stepsim's units (4KiB; 1KB = 1000 B)");
  cmd_->add_flag("-a,--all", f.all, "Sweep message sizes 2 B .. 8 MiB in powers of two");
  cmd_->add_option("-q,--qp", f.qps, "Queue pairs (bandwidth tests)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd_->add_option("-n,--iters", f.iterations,
                   "Iterations, per QP for bandwidth tests (default: 5000 for bandwidth tests, "
                   "1000 for latency tests)")
      ->check(CLI::Range(1, 10'000'000));
  cmd_->add_option("-t,--tx-depth", f.tx_depth, "Outstanding work requests per QP (bandwidth)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd_->add_option("-m,--mtu", f.mtu,
                   "Payload bytes per packet, an IB/RoCE MTU: 256, 512, 1024, 2048 or 4096")
      ->capture_default_str();
  cmd_->add_option("-I,--inline_size,--inline", f.inline_size,
                   "BlueFlame inline up to this many bytes (default: 220 for latency tests, 0 "
                   "for bandwidth tests, as perftest)");
  cmd_->add_flag("--report_gbits", f.report_gbits, "Bandwidth in Gb/sec instead of MB/sec");
  cmd_->add_flag("-F,--CPU-freq", f.cpu_freq,
                 "Do not warn about CPU frequency (accepted: the simulation has no CPU clock)");
  cmd_->add_option("-D,--duration", f.duration,
                   "Run for this long instead of -n: whole seconds as perftest (-D 2), or a "
                   "simulated time (-D 50us; a second at 1.6 Tb/s is minutes of simulation). "
                   "#iterations is then the messages completed (per QP)");
  cmd_->add_flag("-b,--bidirectional", f.bidirectional,
                 "Bandwidth tests: the server sends to the client too, on the same QPs; the "
                 "bandwidth and message rate are both directions' sum, as perftest's");
  cmd_->add_option("-d,--ib-dev", f.device,
                   "Device mlx5_N: NIC N of both servers where --from/--to give no NIC");
  cmd_->add_option("-x,--gid-index", f.gid_index, "RoCE GID index (accepted, no effect)")
      ->check(CLI::Range(0, 255));
  cmd_->add_option("-c,--connection", f.connection,
                   "Connection type: RC (UC, UD, XRC, DC, SRD are not modelled)")
      ->capture_default_str();
  cmd_->add_option("--output", f.output,
                   "Print only one number: bandwidth or message_rate (bandwidth tests, the "
                   "average), latency (latency tests, t_typical)")
      ->check(CLI::IsMember({"bandwidth", "message_rate", "latency"}));
  cmd_->add_option("--json", sim_.json_path, "Also write the results as JSON to this file");
}

// perftest's flags that change nothing modelled (a note each), and the ones honoured: -N, -u,
// --use_cuda.
void BenchPerftestCommand::add_accepted_flags() {
  PerftestFlags& f = flags_;
  cmd_->add_flag("-R,--rdma_cm", f.rdma_cm, "Connect with rdma_cm (a note: QPs start connected)");
  cmd_->add_option("-p,--port", f.port, "TCP port of the handshake (a note)")
      ->check(CLI::Range(1, 65535));
  cmd_->add_option("-i,--ib-port", f.ib_port, "Port of the device (a note: --from/--to name it)")
      ->check(CLI::Range(1, 255));
  cmd_->add_option("-l,--post_list", f.post_list,
                   "Work requests per post call (a note: each is posted on its own)")
      ->check(CLI::Range(1, 65536));
  cmd_->add_option("-Q,--cq-mod", f.cq_mod, "Completions every N work requests (a note)")
      ->check(CLI::Range(1, 65536));
  cmd_->add_flag("-N,--noPeak", f.no_peak, "No peak bandwidth: BW peak is printed as 0");
  cmd_->add_flag("-U,--report-both", f.report_both,
                 "Report both directions separately (a note: -b prints their sum)");
  cmd_->add_flag("-H,--report-histogram", f.histogram,
                 "Latency histogram (a note: the percentiles and --json's samples are printed)");
  cmd_->add_flag("-e,--events", f.events, "Wait for completions by events (a note: polled)");
  cmd_->add_flag("-C,--report-cycles", f.cycles,
                 "Times in CPU cycles (a note: there is no CPU clock, times are in usec)");
  cmd_->add_option("-S,--sl", f.sl, "Service level (a note)")->check(CLI::Range(0, 15));
  cmd_->add_option("-T,--tos", f.tos, "Type of service (a note)")->check(CLI::Range(0, 255));
  cmd_->add_option("-u,--qp-timeout", f.qp_timeout,
                   "QP timeout exponent: the retransmission timeout is 4.096 us x 2^u (IB's "
                   "local ACK timeout; --rto overrides)")
      ->check(CLI::Range(0, 31));
  cmd_->add_option("--use_cuda", f.use_cuda, "GPU buffers: GPUDirect RDMA (as --memory gpudirect)")
      ->expected(0, 1);
  cmd_->add_flag("--run_infinitely", f.run_infinitely,
                 "Run until stopped (a note: one -D duration, or -n iterations, is simulated)");
}

void BenchPerftestCommand::add_sim_options() {
  PerftestSimOptions& o = sim_;
  cmd_->add_option(
      "--topology", o.topology,
      "Topology file (default: topologies/toy-2server-1.6t.yaml of the data files, two "
      "servers; a scenario names its own)");
  cmd_->add_option("--from", o.from, "The client's NIC: SERVER[:NIC] (server index, NIC index)")
      ->capture_default_str();
  cmd_->add_option("--to", o.to, "The server's NIC: SERVER[:NIC]")->capture_default_str();
  cmd_->add_option("--cc", o.cc,
                   "Congestion control: " + list_words(cc_choices()) +
                       " (default none: one pair of NICs on an idle fabric; a scenario's NICs run "
                       "dcqcn unless it says otherwise)")
      ->capture_default_str();
  cmd_->add_option("--retransmission", o.retransmission,
                   "Retransmission: " + list_words(retransmission_choices()) + " (gbn: Go-Back-N)")
      ->capture_default_str();
  cmd_->add_option("--lb", o.lb, "Load balancing in the switches: " + list_words(lb_choices()))
      ->capture_default_str();
  o.fidelity.add(cmd_, {"packet", "cell"});
  cmd_->add_option("--pcie", o.pcie,
                   "NIC host interface: auto (sized for the port) or e.g. gen5x16")
      ->capture_default_str();
  cmd_->add_option("--pcie-fault", o.pcie_fault,
                   "PCIe AER on the client's NIC: GEN@TIME, e.g. gen4@20us (retrains lower)");
  cmd_->add_option("--memory", o.memory, "Buffers: host, gpudirect, gpu_root_complex or bounce")
      ->capture_default_str();
  cmd_->add_option("--rto", o.rto, "Retransmission timeout")->capture_default_str();
  cmd_->add_option("--ber", o.ber, "Pre-FEC BER on every link (default: the topology's)")
      ->check(finite_range(0.0, 0.5));
  cmd_->add_flag("--no-pfc", o.no_pfc, "Lossy fabric (no PFC)");
  cmd_->add_option("--end", o.end, "Simulated time limit per run")->capture_default_str();
  cmd_->add_option("--seed", o.seed, "Seed of the fabric's random choices")->capture_default_str();
  cmd_->add_option("--threads", o.threads, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--nic-config", o.nic_config,
                   "YAML file of NIC, transport and congestion-control parameters (sections nic, "
                   "transport, cc; `stepsim list nic` shows every key)");
  cmd_->add_option("--set", o.sets,
                   "Override one parameter: key=value, e.g. cc.dcqcn.g=0.01 "
                   "(repeatable; after --nic-config and the options above)");
  cmd_->add_flag("--quiet", o.quiet, "No progress output");
}

// Parameters, in order: perftest's defaults (no congestion control; latency tests inline up to
// 220 B), the --nic-config file, the options given on the command line (shorthands of keys),
// then --set.
Result<bool> BenchPerftestCommand::load_parameters(Setup& s) const {
  s.nic.cc.algorithm = "none";
  // Ping-pong latency tests inline up to 220 B; reads and atomics carry no inline data.
  if (s.latency && !nic::perftest_one_sided_latency(s.kind)) s.nic.inline_threshold = 220;
  const config::ParamTable table = nic::nic_param_table(s.nic);
  if (!sim_.nic_config.empty()) {
    if (auto ok = table.load_yaml_file(sim_.nic_config); !ok) return ok.error();
  }
  const std::pair<const char*, const char*> shorthands[] = {
      {"--cc", "cc.algorithm"},   {"--retransmission", "transport.retransmission"},
      {"--rto", "transport.rto"}, {"--pcie", "nic.pcie"},
      {"--memory", "nic.memory"}, {"--inline_size", "nic.inline_threshold"}};
  for (const auto& [option, key] : shorthands) {
    if (cmd_->count(option) == 0) continue;
    if (auto ok = table.set(key, cmd_->get_option(option)->as<std::string>()); !ok) {
      return Error{std::string(option) + ": " + ok.error().message};
    }
  }
  if (cmd_->count("--qp-timeout") > 0 && cmd_->count("--rto") == 0) {
    // IB's local ACK timeout: 4.096 us x 2^u.
    s.nic.rto = SimTime::ns(4096) * (std::int64_t{1} << flags_.qp_timeout);
  }
  if (cmd_->count("--use_cuda") > 0 && cmd_->count("--memory") == 0) {
    if (auto ok = table.set("nic.memory", "gpudirect"); !ok) {
      return Error{"--use_cuda: " + ok.error().message};
    }
  }
  for (const std::string& kv : sim_.sets) {
    if (auto ok = table.apply(kv); !ok) return Error{"--set " + ok.error().message};
  }
  if (auto ok = s.nic.validate(); !ok) return ok.error();
  auto mtu = parse_binary_size(flags_.mtu);
  if (!mtu || (*mtu != 256 && *mtu != 512 && *mtu != 1024 && *mtu != 2048 && *mtu != 4096)) {
    return Error{"--mtu: '" + flags_.mtu +
                 "' is not an IB/RoCE MTU (allowed: 256, 512, 1024, 2048, 4096)"};
  }
  s.fp.mtu = Bytes(*mtu);
  s.fp.lb.policy = sim_.lb;
  s.fp.lb.seed = sim_.seed;
  s.fp.seed = sim_.seed;
  s.fp.ber_override = sim_.ber;
  s.fp.pfc.enabled = !sim_.no_pfc;
  return sim_.fidelity.apply(s.fp);
}

// The two NIC ports (with -d's NIC where --from/--to name none) and the PCIe fault.
Result<bool> BenchPerftestCommand::place(Setup& s) const {
  std::string nic_index = "0";
  if (!flags_.device.empty()) {
    auto dev = parse_device(flags_.device);
    if (!dev) return dev.error();
    nic_index = std::to_string(*dev);
  }
  s.from = sim_.from.find(':') == std::string::npos ? sim_.from + ":" + nic_index : sim_.from;
  s.to = sim_.to.find(':') == std::string::npos ? sim_.to + ":" + nic_index : sim_.to;
  auto a = parse_position(s.from, s.topo);
  if (!a) return Error{"--from: " + a.error().message};
  auto b = parse_position(s.to, s.topo);
  if (!b) return Error{"--to: " + b.error().message};
  if (*a == *b) return Error{"--from and --to name the same NIC"};
  s.a = *a;
  s.b = *b;
  s.line = s.topo.port_types[s.topo.links[s.topo.ports[s.a].link].port_type].data_rate();
  if (sim_.pcie_fault.empty()) return true;
  const std::string& text = sim_.pcie_fault;
  const auto at = text.find('@');
  const std::string gen = text.substr(0, at);
  auto when = parse_time(at == std::string::npos ? "" : text.substr(at + 1));
  if (at == std::string::npos || gen.size() != 4 || gen.rfind("gen", 0) != 0 || gen[3] < '3' ||
      gen[3] > '7' || !when) {
    return Error{"--pcie-fault: '" + text + "' is not GEN@TIME (GEN gen3..gen7, e.g. gen4@20us)"};
  }
  s.nic.pcie_faults.push_back({s.a, *when, gen[3] - '0'});
  return true;
}

Result<BenchPerftestCommand::Setup> BenchPerftestCommand::prepare(int ranks) const {
  Setup s;
  auto kind = nic::parse_perftest_kind(test_.rfind("ib_", 0) == 0 ? test_.substr(3) : test_);
  if (!kind) return kind.error();
  s.kind = *kind;
  s.latency = nic::perftest_is_latency(s.kind);
  const bool atomic =
      s.kind == nic::PerftestKind::kAtomicBw || s.kind == nic::PerftestKind::kAtomicLat;
  if (flags_.bidirectional && s.latency) {
    return Error{"--bidirectional: bandwidth tests only (write_bw, read_bw, send_bw, atomic_bw)"};
  }
  if (atomic && ((!flags_.size.empty() && flags_.size != "8") || flags_.all)) {
    return Error{"--size: atomics are 8 bytes (perftest's fetch-and-add)"};
  }
  if (flags_.connection != "RC") {
    return Error{"--connection: '" + flags_.connection + "' is not modelled (allowed: RC)"};
  }
  if (!flags_.output.empty() && (flags_.output == "latency") != s.latency) {
    return Error{std::string("--output: ") +
                 (s.latency ? "latency tests print latency"
                            : "bandwidth tests print bandwidth or message_rate")};
  }
  if (s.latency && flags_.qps != 1) return Error{"--qp: latency tests use one QP"};
  s.iterations = flags_.iterations > 0 ? flags_.iterations : s.latency ? 1000 : 5000;
  // Every work request is simulated and its completion kept: bound them (-D runs by time).
  constexpr std::int64_t kMaxWorkRequests = 10'000'000;
  const std::int64_t requests = std::int64_t{flags_.qps} * s.iterations;
  if (flags_.duration.empty() && requests > kMaxWorkRequests) {
    return Error{"-q x -n: " + std::to_string(flags_.qps) + " QPs x " +
                 std::to_string(s.iterations) + " iterations = " + std::to_string(requests) +
                 " work requests, more than " + std::to_string(kMaxWorkRequests) +
                 " (each is simulated); lower -n or -q, or run for a time with -D"};
  }
  const char* fallback = atomic ? "8" : s.latency ? "2" : "65536";
  auto size = parse_binary_size(flags_.size.empty() ? fallback : flags_.size);
  if (!size || *size < 1) {
    return Error{"--size: " + (size ? std::string("must be >= 1 byte") : size.error().message)};
  }
  if (flags_.all) {
    for (std::int64_t x = 2; x <= (8LL << 20); x *= 2) s.sizes.push_back(x);
  } else {
    s.sizes.push_back(*size);
  }
  auto end = parse_time(sim_.end);
  if (!end) return Error{"--end: " + end.error().message};
  s.end = *end;
  if (!flags_.duration.empty()) {
    const std::string& d = flags_.duration;
    const bool seconds = d.size() <= 6 && d.find_first_not_of("0123456789") == std::string::npos;
    auto t = parse_time(seconds ? d + "s" : d);
    if (!t || *t <= SimTime::zero() || *t > SimTime::s(3600)) {
      return Error{"--duration: '" + d +
                   "' is not a duration (allowed: whole seconds 1..3600, or a time such as "
                   "50us)"};
    }
    s.duration = *t;
    // What is in flight at the end completes: the run may last past the duration.
    if (cmd_->count("--end") == 0) s.end = std::max(s.end, s.duration * 2 + SimTime::ms(1));
  }
  if (auto ok = load_parameters(s); !ok) return ok.error();
  const std::string path = sim_.topology.empty() ? data_dir() + "/topologies/toy-2server-1.6t.yaml"
                                                 : find_data_file(sim_.topology, "topologies");
  auto topo = load_topology_within_memory(path, ranks, true);
  if (!topo) return not_found_note(topo.error(), sim_.topology, "topologies");
  s.topo = std::move(topo).value();
  if (auto ok = place(s); !ok) return ok.error();
  return s;
}

// perftest's parameter block and the table's header.
std::vector<std::string> BenchPerftestCommand::notes() const {
  std::vector<std::string> out;
  const auto given = [&](const char* o) { return cmd_->count(o) > 0; };
  if (!flags_.server.empty()) {
    out.push_back("server " + flags_.server + " ignored: --to names the server's NIC");
  }
  const std::pair<const char*, const char*> accepted[] = {
      {"--rdma_cm", "-R: QPs start connected, rdma_cm is not simulated"},
      {"--port", "-p: the TCP handshake is not simulated"},
      {"--ib-port", "-i: --from and --to name the NIC ports"},
      {"--post_list", "-l: each work request is posted on its own"},
      {"--cq-mod", "-Q: every work request completes on its own"},
      {"--report-both", "-U: -b prints both directions' sum"},
      {"--report-histogram", "-H: no histogram; the percentiles are printed"},
      {"--events", "-e: completions are polled"},
      {"--report-cycles", "-C: no CPU clock, times are in usec"},
      {"--sl", "-S: the service level is not modelled"},
      {"--tos", "-T: the type of service is not modelled"},
      {"--run_infinitely", "--run_infinitely: one run (-D or -n) is simulated"}};
  for (const auto& [option, text] : accepted) {
    if (given(option)) out.emplace_back(text);
  }
  return out;
}

void BenchPerftestCommand::print_preamble(const Setup& s) const {
  if (!flags_.output.empty()) return;
  for (const std::string& n : notes()) std::printf(" note: %s\n", n.c_str());
  std::printf("%s                    %s\n", kRule, banner(s.kind));
  std::printf(" Dual-port       : OFF\t\tDevice         : mlx5_%s\n",
              s.from.substr(s.from.find(':') + 1).c_str());
  std::printf(" Number of qps   : %d\t\tTransport type : IB\n", flags_.qps);
  std::printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
  if (!s.latency) std::printf(" TX depth        : %d\n", flags_.tx_depth);
  std::printf(" Mtu             : %lld[B]\n", static_cast<long long>(s.fp.mtu.count()));
  std::printf(" Link type       : Ethernet\n");
  std::printf(" Max inline data : %lld[B]\n", static_cast<long long>(s.nic.inline_threshold));
  std::printf("%s", kRule);
  if (s.latency) {
    std::printf(
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
        "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
  } else {
    const char* u = flags_.report_gbits ? "Gb/sec" : "MB/sec";
    std::printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", u, u);
  }
}

// Below perftest's closing line: where it ran, what the NICs, transport and fabric did.
void BenchPerftestCommand::print_details(const Setup& s, const Totals& t, int ranks) const {
  // Above the closing line, where a parser of perftest's table reads.
  if (!t.completed) {
    std::printf(" INTERRUPTED at %.6f s of simulated time: the row%s cover%s what ran until then\n",
                t.last.stats.final_time.seconds(), t.rows.size() > 1 ? "s" : "",
                t.rows.size() > 1 ? "" : "s");
  }
  std::printf("%s", kRule);
  std::printf("topology         %s: NIC %s (port %u) -> NIC %s (port %u), %s\n",
              s.topo.name.c_str(), s.from.c_str(), s.a, s.to.c_str(), s.b,
              to_string(s.line).c_str());
  std::printf("nic              %s, memory %s, inline %lld B, cc %s, %s, rto %s, mtu %lld\n",
              nic::describe(nic::size_for_port(s.nic.pcie, s.line)).c_str(),
              nic::memory_kind_name(s.nic.memory).c_str(),
              static_cast<long long>(s.nic.inline_threshold), s.nic.cc.algorithm.c_str(),
              nic::resolve_retransmission(s.nic.retransmission, s.fp.lb.policy).c_str(),
              to_string(s.nic.rto).c_str(), static_cast<long long>(s.fp.mtu.count()));
  const std::string runs = s.duration > SimTime::zero()
                               ? "for " + to_string(s.duration)
                               : std::to_string(s.iterations) + " iterations";
  std::printf("test             %d QP(s), %s%s%s, lb %s, pfc %s, fidelity %s\n", flags_.qps,
              runs.c_str(), flags_.bidirectional ? ", bidirectional" : "",
              s.latency ? "" : (", tx depth " + std::to_string(flags_.tx_depth)).c_str(),
              sim_.lb.c_str(), sim_.no_pfc ? "off" : "on", sim_.fidelity.describe(s.fp).c_str());
  if (!t.completed) std::printf("status           INTERRUPTED\n");
  if (s.latency && s.sizes.size() == 1) {
    const nic::MessageTrace& m = t.last.rdma.traces[nic::endpoint_of(0, 0)];
    const nic::MessageTrace& rcv = t.last.rdma.traces[nic::endpoint_of(0, 1)];
    const auto ns = [](std::int64_t ps) { return static_cast<double>(ps) * 1e-3; };
    std::printf(
        "latency split    post %.1f, doorbell %.1f, context %.1f, WQE fetch %.1f, packet "
        "generation %.1f, DMA %.1f, MAC %.1f, wire %.1f, remote %.1f, CQE %.1f ns (last message: "
        "%.1f ns)\n",
        ns(m.post), ns(m.doorbell), ns(m.ctx_lookup), ns(m.wqe_fetch), ns(m.pkt_gen), ns(m.dma),
        ns(m.mac), ns(rcv.arrived_ps - m.sent_ps), ns(rcv.placed_ps - rcv.arrived_ps),
        ns(rcv.cqe_ps - rcv.placed_ps), ns(rcv.cqe_ps - m.posted_ps));
  }
  const nic::RdmaSummary rs = nic::summarize(t.last.rdma);
  const nic::QpStats& q = rs.qp;
  std::printf("transport        data packets %" PRIu64 ", retransmitted %" PRIu64
              ", timeouts %" PRIu64 ", NAKs %" PRIu64 ", out of order %" PRIu64 ", CNPs %" PRIu64
              ", ECN-marked %" PRIu64 ", QPs in ERROR %" PRIu64 "\n",
              q.packets, q.retransmitted, q.timeouts, q.naks_sent, q.out_of_order, q.cnps_sent,
              q.ecn_received, rs.qps_in_error);
  std::printf("nic caches       QP context hit %.2f%%, translation hit %.2f%%, WQE fetches %" PRIu64
              "\n",
              rs.ctx_hit_percent(), rs.mtt_hit_percent(), rs.nic.wqe_fetches);
  const fabric::FabricSummary& fs = t.last.summary;
  std::printf("fabric           ECN marks %" PRIu64 ", PAUSE frames %" PRIu64
              ", drops buffer %" PRIu64 " fec %" PRIu64 ", max queue %lld B\n",
              fs.ecn_marks, fs.pause_frames, fs.drops_buffer, fs.drops_fec,
              static_cast<long long>(fs.max_queue));
  print_engine_line("engine           ", ranks, t.last.stats.threads, t.events, t.wall);
  std::printf("digest           %s\n", digest_hex(t.digest).c_str());
}

int BenchPerftestCommand::write_json_file(int rank, const Setup& s, const Totals& t) const {
  const nic::RdmaSummary rs = nic::summarize(t.last.rdma);
  nlohmann::json j;
  j["benchmark"] = "perftest";
  j["test"] = test_;
  j["topology"] = s.topo.name;
  j["qps"] = flags_.qps;
  j["iterations"] = s.iterations;
  j["bidirectional"] = flags_.bidirectional;
  j["duration_s"] = s.duration.seconds();
  j["complete"] = t.completed;  // false: interrupted, the rows cover what ran
  j["simulated_s"] = t.last.stats.final_time.seconds();
  j["cc"] = s.nic.cc.algorithm;
  j["retransmission"] = nic::resolve_retransmission(s.nic.retransmission, s.fp.lb.policy);
  j["lb"] = sim_.lb;
  j["fidelity"] = sim_.fidelity.fidelity;
  j["cell_bytes"] = s.fp.cell.count();
  j["rows"] = t.rows;
  j["retransmitted"] = rs.qp.retransmitted;
  j["timeouts"] = rs.qp.timeouts;
  j["transport"] = stat_json(rs.qp);  // every declared statistic, summed over the QPs
  j["nic"] = stat_json(rs.nic);       // and over the NICs
  j["digest"] = digest_hex(t.digest);
  return write_json(rank, sim_.json_path, j);
}

int BenchPerftestCommand::execute(int rank, int ranks) {
  auto prepared = prepare(ranks);
  if (!prepared) return user_error(rank, prepared.error().message);
  const Setup& s = *prepared;
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", sim_.json_path);
  if (auto ok = check_outputs_once(outputs, {sim_.topology}, rank); !ok)
    return user_error(rank, ok.error().message);
  if (auto ok = check_fabric_memory(s.topo, ranks); !ok)
    return user_error(rank, ok.error().message);
  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  const pdes::EngineOptions opts =
      bench_engine_options(sim_.threads, s.end, !sim_.quiet && s.sizes.size() == 1, rank);
  if (rank == 0) print_preamble(s);
  Totals t;
  for (std::int64_t bytes : s.sizes) {
    nic::PerftestSpec spec;
    spec.kind = s.kind;
    spec.bytes = bytes;
    spec.qps = flags_.qps;
    spec.iterations = s.iterations;
    spec.tx_depth = flags_.tx_depth;
    spec.a = s.a;
    spec.b = s.b;
    spec.bidirectional = flags_.bidirectional;
    spec.duration = s.duration;
    nic::Perftest app(spec, s.topo);
    auto r = nic::run_rdma(s.topo, app.connections(), s.nic, s.fp, &app, sync, opts);
    if (!r) return user_error(rank, r.error().message);
    const nic::PerftestResult pr = app.result(sync);
    t.last = std::move(r).value();
    t.digest = hash_combine(t.digest, t.last.stats.digest);
    t.wall += t.last.stats.wall_s;
    t.events += t.last.stats.events;
    t.completed = t.completed && t.last.stats.completed;
    // Duration tests: the messages completed (per QP and direction) are the iterations.
    const int sides = flags_.bidirectional ? 2 : 1;
    const int iterations =
        s.duration > SimTime::zero()
            ? static_cast<int>(pr.messages / (s.latency ? 1 : std::int64_t{flags_.qps} * sides))
            : s.iterations;
    if (rank == 0) {
      t.rows.push_back(print_row(pr, bytes, iterations, s.latency, flags_.report_gbits,
                                 flags_.no_peak, flags_.output));
    }
    if (!t.last.stats.completed) break;
  }
  finish_progress();
  if (rank != 0) return t.completed ? kExitOk : interrupted_exit_code();
  if (flags_.output.empty()) print_details(s, t, ranks);
  if (!sim_.json_path.empty()) {
    if (const int rc = write_json_file(rank, s, t); rc != kExitOk) return rc;
  }
  return t.completed ? kExitOk : interrupted_exit_code();
}

}  // namespace stepsim::cli
