#include "src/cli/bench_perftest.hpp"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "src/cli/cli.hpp"
#include "src/cli/data_dir.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {
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

}  // namespace

BenchPerftestCommand::BenchPerftestCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "perftest",
      "perftest on the simulated RDMA NICs, transport and fabric: latency percentiles, Gb/s and "
      "Mpps between two NIC ports of a topology, like ib_write_lat / ib_write_bw / ib_send_lat / "
      "ib_read_bw.");
  cmd_->add_option("test", test_, "write_lat, write_bw, send_lat or read_bw")
      ->required()
      ->check(CLI::IsMember({"write_lat", "write_bw", "send_lat", "read_bw"}));
  cmd_->add_option("--topology", topology_,
                   "Topology file (default: topologies/toy-2server-1.6t.yaml of the data files)");
  cmd_->add_option("--from", a_, "The client's NIC: SERVER[:NIC] (server index, NIC index)")
      ->capture_default_str();
  cmd_->add_option("--to", b_, "The server's NIC: SERVER[:NIC]")->capture_default_str();
  cmd_->add_option("-s,--size", size_, "Message size (e.g. 64, 4KiB, 1MiB)")->capture_default_str();
  cmd_->add_flag("-a,--all", all_, "Sweep message sizes 2 B .. 8 MiB in powers of two");
  cmd_->add_option("-q,--qp", qps_, "Queue pairs (bandwidth tests)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd_->add_option("-n,--iters", iterations_, "Iterations (per QP for bandwidth tests)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  cmd_->add_option("-t,--tx-depth", tx_depth_, "Outstanding work requests per QP (bandwidth)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd_->add_option("--cc", cc_, "Congestion control: none, dcqcn or hpcc")->capture_default_str();
  cmd_->add_option("--retransmission", retransmission_, "gbn (Go-Back-N) or selective")
      ->capture_default_str();
  cmd_->add_option("--lb", lb_, "Load balancing in the switches: ecmp, flowlet, adaptive, spray")
      ->capture_default_str();
  cmd_->add_option("--mtu", mtu_, "Payload bytes per packet")->capture_default_str();
  fidelity_.add(cmd_, {"packet", "cell"});
  cmd_->add_option("--pcie", pcie_, "NIC host interface: auto (sized for the port) or e.g. gen5x16")
      ->capture_default_str();
  cmd_->add_option("--pcie-fault", pcie_fault_,
                   "PCIe AER on the client's NIC: GEN@TIME, e.g. gen4@20us (retrains lower)");
  cmd_->add_option("--memory", memory_, "Buffers: host, gpudirect, gpu_root_complex or bounce")
      ->capture_default_str();
  cmd_->add_option("--inline", inline_, "BlueFlame inline up to this many bytes (0: off)")
      ->capture_default_str();
  cmd_->add_option("--rto", rto_, "Retransmission timeout")->capture_default_str();
  cmd_->add_option("--ber", ber_, "Pre-FEC BER on every link (default: the topology's)")
      ->check(finite_range(0.0, 0.5));
  cmd_->add_flag("--no-pfc", no_pfc_, "Lossy fabric (no PFC)");
  cmd_->add_option("--end", end_, "Simulated time limit per run")->capture_default_str();
  cmd_->add_option("--seed", seed_, "Seed of the fabric's random choices")->capture_default_str();
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--nic-config", nic_config_,
                   "YAML file of NIC, transport and congestion-control parameters (sections nic, "
                   "transport, cc; `stepsim list nic` shows every key)");
  cmd_->add_option("--set", sets_,
                   "Override one parameter: key=value, e.g. cc.dcqcn.g=0.01 "
                   "(repeatable; after --nic-config and the options above)");
  cmd_->add_option("--json", json_path_, "Also write the results as JSON to this file");
  cmd_->add_flag("--quiet", quiet_, "No progress output");
  for (CLI::Option* opt : cmd_->get_options()) {
    if (opt->get_name() != "--set") opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

int BenchPerftestCommand::execute(int rank, int ranks) {
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", json_path_);
  if (auto ok = check_outputs_once(outputs, {topology_, nic_config_}, rank); !ok)
    return user_error(rank, ok.error().message);
  nic::NicParams nic;
  fabric::FabricParams fp;
  auto kind = nic::parse_perftest_kind(test_);
  if (!kind) return user_error(rank, kind.error().message);
  auto size = parse_bytes(size_);
  if (!size || size->count() < 1) {
    return user_error(
        rank, "--size: " + (size ? std::string("must be >= 1 byte") : size.error().message));
  }
  auto mtu = parse_bytes(mtu_);
  if (!mtu) return user_error(rank, "--mtu: " + mtu.error().message);
  auto end = parse_time(end_);
  if (!end) return user_error(rank, "--end: " + end.error().message);
  // Parameters, in order: perftest's defaults (no congestion control), the --nic-config file,
  // the options given on the command line (shorthands of keys), then --set.
  nic.cc.algorithm = "none";
  const config::ParamTable table = nic::nic_param_table(nic);
  if (!nic_config_.empty()) {
    if (auto ok = table.load_yaml_file(nic_config_); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  const std::pair<const char*, const char*> shorthands[] = {
      {"--cc", "cc.algorithm"},   {"--retransmission", "transport.retransmission"},
      {"--rto", "transport.rto"}, {"--pcie", "nic.pcie"},
      {"--memory", "nic.memory"}, {"--inline", "nic.inline_threshold"}};
  for (const auto& [option, key] : shorthands) {
    if (cmd_->count(option) == 0) continue;
    const std::string value = cmd_->get_option(option)->as<std::string>();
    if (auto ok = table.set(key, value); !ok) {
      return user_error(rank, std::string(option) + ": " + ok.error().message);
    }
  }
  for (const std::string& kv : sets_) {
    if (auto ok = table.apply(kv); !ok) return user_error(rank, "--set " + ok.error().message);
  }
  cc_ = nic.cc.algorithm;
  memory_ = nic::memory_kind_name(nic.memory);
  if (auto ok = nic.validate(); !ok) return user_error(rank, ok.error().message);
  fp.mtu = *mtu;
  fp.lb.policy = lb_;
  fp.lb.seed = seed_;
  fp.seed = seed_;
  fp.ber_override = ber_;
  fp.pfc.enabled = !no_pfc_;
  if (auto ok = fidelity_.apply(fp); !ok) return user_error(rank, ok.error().message);
  if (topology_.empty()) topology_ = data_dir() + "/topologies/toy-2server-1.6t.yaml";
  auto topo = topology::load_topology(topology_);
  if (!topo) return user_error(rank, topo.error().message);
  if (auto ok = check_fabric_memory(*topo, ranks); !ok) return user_error(rank, ok.error().message);
  auto a = parse_position(a_, *topo);
  if (!a) return user_error(rank, "--from: " + a.error().message);
  auto b = parse_position(b_, *topo);
  if (!b) return user_error(rank, "--to: " + b.error().message);
  if (*a == *b) return user_error(rank, "--from and --to name the same NIC");
  if (!pcie_fault_.empty()) {
    const auto at = pcie_fault_.find('@');
    const std::string gen = pcie_fault_.substr(0, at);
    auto when = parse_time(at == std::string::npos ? "" : pcie_fault_.substr(at + 1));
    if (at == std::string::npos || gen.size() != 4 || gen.rfind("gen", 0) != 0 || gen[3] < '3' ||
        gen[3] > '7' || !when) {
      return user_error(rank, "--pcie-fault: '" + pcie_fault_ +
                                  "' is not GEN@TIME (GEN gen3..gen7, e.g. gen4@20us)");
    }
    nic.pcie_faults.push_back({*a, *when, gen[3] - '0'});
  }
  const bool latency =
      *kind == nic::PerftestKind::kWriteLat || *kind == nic::PerftestKind::kSendLat;
  if (latency && qps_ != 1) return user_error(rank, "--qp: latency tests use one QP");

  std::vector<std::int64_t> sizes;
  if (all_) {
    for (std::int64_t s = 2; s <= (8LL << 20); s *= 2) sizes.push_back(s);
  } else {
    sizes.push_back(size->count());
  }
  pdes::MpiSync sync;
  const pdes::EngineOptions opts =
      bench_engine_options(threads_, *end, !quiet_ && sizes.size() == 1, rank);

  const DataRate line = topo->port_types[topo->links[topo->ports[*a].link].port_type].data_rate();
  if (rank == 0) {
    std::printf("stepsim bench perftest %s\n", test_.c_str());
    std::printf("topology         %s: NIC %s (port %u) -> NIC %s (port %u), %s\n",
                topo->name.c_str(), a_.c_str(), *a, b_.c_str(), *b, to_string(line).c_str());
    std::printf("nic              %s, memory %s, inline %lld B, cc %s, %s, rto %s, mtu %lld\n",
                nic::describe(nic::size_for_port(nic.pcie, line)).c_str(), memory_.c_str(),
                static_cast<long long>(nic.inline_threshold), cc_.c_str(),
                nic::retransmission_name(nic.retransmission).c_str(), to_string(nic.rto).c_str(),
                static_cast<long long>(fp.mtu.count()));
    std::printf("test             %d QP(s), %d iterations%s, lb %s, pfc %s, fidelity %s\n", qps_,
                iterations_, latency ? "" : (", tx depth " + std::to_string(tx_depth_)).c_str(),
                lb_.c_str(), no_pfc_ ? "off" : "on", fidelity_.describe(fp).c_str());
    std::printf("%10s %12s %12s %12s %12s %12s %12s %14s\n", "#bytes", "#iterations", "t_p50[usec]",
                "t_p99[usec]", "t_p999[usec]", "t_avg[usec]", "BW[Gb/sec]", "MsgRate[Mpps]");
  }
  nlohmann::json rows = nlohmann::json::array();
  std::uint64_t digest = 0;
  nic::RdmaRun last;
  nic::PerftestSpec spec;
  bool completed = true;
  double wall = 0;
  std::uint64_t events = 0;
  for (std::int64_t s : sizes) {
    spec.kind = *kind;
    spec.bytes = s;
    spec.qps = qps_;
    spec.iterations = iterations_;
    spec.tx_depth = tx_depth_;
    spec.a = *a;
    spec.b = *b;
    nic::Perftest app(spec, *topo);
    auto r = nic::run_rdma(*topo, app.connections(), nic, fp, &app, sync, opts);
    if (!r) return user_error(rank, r.error().message);
    const nic::PerftestResult pr = app.result(sync);
    last = std::move(r).value();
    digest = hash_combine(digest, last.stats.digest);
    wall += last.stats.wall_s;
    events += last.stats.events;
    completed = completed && last.stats.completed;
    if (rank == 0) {
      std::printf("%10lld %12d %12.2f %12.2f %12.2f %12.2f %12.2f %14.3f\n",
                  static_cast<long long>(s), iterations_, pr.percentile_us(0.5),
                  pr.percentile_us(0.99), pr.percentile_us(0.999), pr.average_us(), pr.gbps(),
                  pr.mpps());
      nlohmann::json row;
      row["bytes"] = s;
      row["iterations"] = iterations_;
      row["messages"] = pr.messages;
      row["t_p50_us"] = pr.percentile_us(0.5);
      row["t_p99_us"] = pr.percentile_us(0.99);
      row["t_p999_us"] = pr.percentile_us(0.999);
      row["t_avg_us"] = pr.average_us();
      row["gbps"] = pr.gbps();
      row["mpps"] = pr.mpps();
      row["errors"] = pr.errors;
      rows.push_back(row);
    }
    if (!last.stats.completed) break;
  }
  finish_progress();
  if (rank != 0) return completed ? kExitOk : interrupted_exit_code();

  if (!completed) std::printf("status           INTERRUPTED\n");
  if (latency && sizes.size() == 1) {
    const nic::MessageTrace& t = last.rdma.traces[nic::endpoint_of(0, 0)];
    const nic::MessageTrace& rcv = last.rdma.traces[nic::endpoint_of(0, 1)];
    const auto ns = [](std::int64_t ps) { return static_cast<double>(ps) * 1e-3; };
    std::printf(
        "latency split    post %.1f, doorbell %.1f, context %.1f, WQE fetch %.1f, packet "
        "generation %.1f, DMA %.1f, MAC %.1f, wire %.1f, remote %.1f, CQE %.1f ns (last message: "
        "%.1f ns)\n",
        ns(t.post), ns(t.doorbell), ns(t.ctx_lookup), ns(t.wqe_fetch), ns(t.pkt_gen), ns(t.dma),
        ns(t.mac), ns(rcv.arrived_ps - t.sent_ps), ns(rcv.placed_ps - rcv.arrived_ps),
        ns(rcv.cqe_ps - rcv.placed_ps), ns(rcv.cqe_ps - t.posted_ps));
  }
  const nic::RdmaSummary rs = nic::summarize(last.rdma);
  const nic::QpStats& q = rs.qp;
  std::printf("transport        data packets %" PRIu64 ", retransmitted %" PRIu64
              ", timeouts %" PRIu64 ", NAKs %" PRIu64 ", out of order %" PRIu64 ", CNPs %" PRIu64
              ", ECN-marked %" PRIu64 ", QPs in ERROR %" PRIu64 "\n",
              q.packets, q.retransmitted, q.timeouts, q.naks_sent, q.out_of_order, q.cnps_sent,
              q.ecn_received, rs.qps_in_error);
  std::printf("nic caches       QP context hit %.2f%%, translation hit %.2f%%, WQE fetches %" PRIu64
              "\n",
              rs.ctx_hit_percent(), rs.mtt_hit_percent(), rs.nic.wqe_fetches);
  const fabric::FabricSummary& fs = last.summary;
  std::printf("fabric           ECN marks %" PRIu64 ", PAUSE frames %" PRIu64
              ", drops buffer %" PRIu64 " fec %" PRIu64 ", max queue %lld B\n",
              fs.ecn_marks, fs.pause_frames, fs.drops_buffer, fs.drops_fec,
              static_cast<long long>(fs.max_queue));
  std::printf("engine           ranks %d, threads/rank %d, %" PRIu64
              " events in %.3f s (%.2f M/s)\n",
              ranks, last.stats.threads, events, wall,
              wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
  std::printf("digest           %s\n", digest_hex(digest).c_str());
  if (!json_path_.empty()) {
    nlohmann::json j;
    j["benchmark"] = "perftest";
    j["test"] = test_;
    j["topology"] = topo->name;
    j["qps"] = qps_;
    j["cc"] = cc_;
    j["retransmission"] = nic::retransmission_name(nic.retransmission);
    j["lb"] = lb_;
    j["fidelity"] = fidelity_.fidelity;
    j["cell_bytes"] = fp.cell.count();
    j["rows"] = rows;
    j["retransmitted"] = q.retransmitted;
    j["timeouts"] = q.timeouts;
    j["digest"] = digest_hex(digest);
    if (const int rc = write_json(rank, json_path_, j); rc != kExitOk) return rc;
  }
  return completed ? kExitOk : interrupted_exit_code();
}

}  // namespace stepsim::cli
