#include "src/cli/bench_fabric.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/memory.hpp"
#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

BenchFabricCommand::BenchFabricCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "fabric",
      "Raw traffic over a topology at packet level (before the RDMA layer): permutation, incast, "
      "all_to_all, hotspot or pair flows from NIC to NIC at line rate; prints packet-hops/s and "
      "what the fabric did. Run under mpirun for several ranks.");
  cmd_->add_option("--topology", topology_, "Topology file (topologies/*.yaml)")->required();
  cmd_->add_option("--pattern", traffic_.pattern,
                   "permutation, incast, all_to_all, hotspot or pair")
      ->capture_default_str()
      ->check(CLI::IsMember({"permutation", "incast", "all_to_all", "hotspot", "pair"}));
  cmd_->add_option("--flow-bytes", flow_bytes_, "Bytes per flow (e.g. 2000000, 1MiB)")
      ->capture_default_str();
  cmd_->add_option("--window", window_,
                   "Window-based flows: unacknowledged payload bytes per flow (0: line rate)")
      ->capture_default_str();
  cmd_->add_option("--senders", traffic_.senders, "incast: senders into one NIC")
      ->capture_default_str();
  cmd_->add_option("--qps", traffic_.qps, "pair: QPs between the two NICs")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("--hot-fraction", traffic_.hot_fraction,
                   "hotspot: share of flows to the hot NIC")
      ->capture_default_str()
      ->check(finite_range(0.0, 1.0));
  cmd_->add_option("--entropy", entropy_, "ECMP entropy per QP: fixed, udp_sport or flow_label")
      ->capture_default_str()
      ->check(CLI::IsMember({"fixed", "udp_sport", "flow_label"}));
  cmd_->add_option("--lb", params_.lb.policy, "Load balancing: ecmp, flowlet, adaptive or spray")
      ->capture_default_str();
  cmd_->add_option("--flowlet-timeout", flowlet_timeout_, "flowlet: idle gap (a time)")
      ->capture_default_str();
  cmd_->add_option("--routing", params_.routing, "minimal, or valiant (dragonfly)")
      ->capture_default_str()
      ->check(CLI::IsMember({"minimal", "valiant"}));
  cmd_->add_option("--mtu", mtu_, "Payload bytes per packet")->capture_default_str();
  fidelity_.add(cmd_, {"packet", "cell"});
  cmd_->add_option("--buffer", buffer_, "Shared buffer per switch")->capture_default_str();
  cmd_->add_option("--ber", ber_, "Pre-FEC BER on every link (default: the topology's)")
      ->check(finite_range(0.0, 0.5));
  cmd_->add_option("--fault", faults_,
                   "A link fault (repeatable): down:LINK@TIME, up:LINK@TIME, lanes:LINK@TIME=N, "
                   "flap:LINK@START,PERIOD,DOWN,COUNT (LINK: index of the link in the topology, in "
                   "generation order)");
  cmd_->add_option("--burst", params_.burst_symbols,
                   "FEC error bursts: symbols each error event corrupts (1 = independent)")
      ->capture_default_str()
      ->check(CLI::Range(1, 15));
  cmd_->add_flag("--no-fec", no_fec_, "No FEC: any bit error loses the frame");
  cmd_->add_flag("--no-reroute", no_reroute_, "Drop packets whose chosen port is down");
  cmd_->add_flag("--no-pfc", no_pfc_, "Lossy fabric: no PFC (packets beyond the buffer drop)");
  cmd_->add_flag("--no-ecn", no_ecn_, "No ECN marking");
  cmd_->add_flag("--store-and-forward", store_and_forward_, "Switches wait for the whole packet");
  cmd_->add_option("--transport", transport_,
                   "raw (flows straight from the NIC port) or rdma (RDMA WRITEs through the NIC "
                   "pipeline and RC transport)")
      ->capture_default_str()
      ->check(CLI::IsMember({"raw", "rdma"}));
  cmd_->add_option("--cc", cc_, "rdma: congestion control (none, dcqcn, hpcc)")
      ->capture_default_str();
  cmd_->add_option("--retransmission", retransmission_, "rdma: gbn or selective")
      ->capture_default_str();
  cmd_->add_option("--message", message_, "rdma: bytes per WRITE (a flow is several)")
      ->capture_default_str();
  cmd_->add_option("--nic-config", nic_config_,
                   "rdma: YAML file of NIC, transport and congestion-control parameters");
  cmd_->add_option("--set", sets_, "rdma: override one parameter, key=value (repeatable)");
  cmd_->add_option("--end", end_, "Simulated time limit")->capture_default_str();
  cmd_->add_option("--seed", traffic_.seed, "Seed of the traffic and the fabric's random choices")
      ->capture_default_str();
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--partition", partition_, "Partitioner of LPs onto ranks: block or metis")
      ->capture_default_str();
  cmd_->add_option("--repeat", repeat_, "Run N times in this process; report the median run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd_->add_option("--json", json_path_, "Also write the results as JSON to this file");
  cmd_->add_flag("--quiet", quiet_, "No progress output");
  for (CLI::Option* opt : cmd_->get_options()) {
    if (opt->get_name() != "--fault" && opt->get_name() != "--set")
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

int BenchFabricCommand::execute(int rank, int ranks) {
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", json_path_);
  if (auto ok = check_outputs_once(outputs, {topology_, nic_config_}, rank); !ok)
    return user_error(rank, ok.error().message);
  auto bytes = parse_bytes(flow_bytes_);
  if (!bytes) return user_error(rank, "--flow-bytes: " + bytes.error().message);
  auto mtu = parse_bytes(mtu_);
  if (!mtu) return user_error(rank, "--mtu: " + mtu.error().message);
  auto buffer = parse_bytes(buffer_);
  if (!buffer) return user_error(rank, "--buffer: " + buffer.error().message);
  auto end = parse_time(end_);
  if (!end) return user_error(rank, "--end: " + end.error().message);
  auto timeout = parse_time(flowlet_timeout_);
  if (!timeout) return user_error(rank, "--flowlet-timeout: " + timeout.error().message);
  auto window = parse_bytes(window_);
  if (!window) return user_error(rank, "--window: " + window.error().message);
  traffic_.window = window->count();
  auto entropy = fabric::parse_entropy(entropy_);
  if (!entropy) return user_error(rank, "--entropy: " + entropy.error().message);
  traffic_.flow_bytes = bytes->count();
  traffic_.entropy = *entropy;
  params_.mtu = *mtu;
  params_.sw.buffer = *buffer;
  params_.sw.cut_through = !store_and_forward_;
  params_.pfc.enabled = !no_pfc_;
  params_.ecn.enabled = !no_ecn_;
  params_.ber_override = ber_;
  params_.fec = !no_fec_;
  params_.reroute = !no_reroute_;
  params_.lb.flowlet_timeout = *timeout;
  params_.lb.seed = traffic_.seed;
  params_.seed = traffic_.seed;
  if (auto ok = fidelity_.apply(params_); !ok) return user_error(rank, ok.error().message);
  if (auto ok = params_.validate(); !ok) return user_error(rank, ok.error().message);
  if (auto lb = fabric::make_load_balancer(params_.lb, 0); !lb)
    return user_error(rank, "--lb: " + lb.error().message);

  const std::int64_t rss_before = current_rss_bytes();
  auto topo = topology::load_topology(topology_);
  if (!topo) return user_error(rank, topo.error().message);
  if (auto ok = check_fabric_memory(*topo, ranks); !ok) return user_error(rank, ok.error().message);
  for (const std::string& f : faults_) {
    if (auto ok = check_fault_bounds(f, *topo); !ok) {
      return user_error(rank, "--fault: " + ok.error().message);
    }
    if (auto ok =
            fabric::parse_fault(f, static_cast<std::uint32_t>(topo->links.size()), params_.faults);
        !ok) {
      return user_error(rank, "--fault: " + ok.error().message);
    }
  }
  auto flows = fabric::make_flows(*topo, traffic_);
  if (!flows) return user_error(rank, "traffic: " + flows.error().message);

  pdes::MpiSync sync;
  pdes::EngineOptions opts;
  opts.threads = threads_;
  opts.end = *end;
  opts.partitioner = partition_;
  if (!quiet_) {
    opts.progress_every = progress_interval();
    opts.on_progress = print_progress;
  }
  install_stop_handlers();
  warn_if_threads_exceed_cpus(threads_, rank);

  nic::NicParams nic;
  std::vector<nic::Connection> conns;
  std::vector<nic::Transfer> transfers;
  if (transport_ == "rdma") {
    const config::ParamTable table = nic::nic_param_table(nic);
    if (!nic_config_.empty()) {
      if (auto ok = table.load_yaml_file(nic_config_); !ok) {
        return user_error(rank, ok.error().message);
      }
    }
    for (const auto& [option, key] : {std::pair{"--cc", "cc.algorithm"},
                                      std::pair{"--retransmission", "transport.retransmission"}}) {
      if (cmd_->count(option) == 0 && !nic_config_.empty()) continue;  // the file's value
      const std::string value = cmd_->get_option(option)->as<std::string>();
      if (auto ok = table.set(key, value); !ok) {
        return user_error(rank, std::string(option) + ": " + ok.error().message);
      }
    }
    for (const std::string& kv : sets_) {
      if (auto ok = table.apply(kv); !ok) return user_error(rank, "--set " + ok.error().message);
    }
    if (auto ok = nic.validate(); !ok) return user_error(rank, ok.error().message);
    cc_ = nic.cc.algorithm;
    retransmission_ = nic.retransmission;
    auto message = parse_bytes(message_);
    if (!message || message->count() < 1) {
      return user_error(rank, "--message: " + (message ? std::string("must be >= 1 byte")
                                                       : message.error().message));
    }
    // Each flow becomes a connection whose side A writes the flow's bytes in messages.
    const std::int64_t m = std::min(message->count(), traffic_.flow_bytes);
    for (const fabric::Flow& f : *flows) {
      conns.push_back(nic::Connection{f.src_nic, f.dst_nic, f.prio, f.entropy, f.label});
      nic::Transfer t;
      t.connection = f.id;
      t.message_bytes = m;
      t.messages = static_cast<int>((traffic_.flow_bytes + m - 1) / m);
      t.depth = 8;
      t.start = f.start;
      transfers.push_back(t);
    }
  }
  std::vector<fabric::FabricRun> runs;
  for (int i = 0; i < repeat_; ++i) {
    if (transport_ == "rdma") {
      nic::BulkApp app(transfers, conns, *topo, SimTime::zero());
      auto r = nic::run_rdma(*topo, conns, nic, params_, &app, sync, opts);
      if (!r) return user_error(rank, r.error().message);
      fabric::FabricRun fr;
      fr.stats = r->stats;
      fr.results = std::move(r->fabric);
      fr.summary = r->summary;
      // Flow completion times from the WRITE completions.
      const nic::BulkResult b = app.result(sync);
      std::vector<std::pair<std::int64_t, std::int64_t>> done;
      for (std::size_t t = 0; t < transfers.size(); ++t) {
        if (b.done_ps[t] >= 0) done.emplace_back(transfers[t].start.picoseconds(), b.done_ps[t]);
      }
      fr.summary.flows = transfers.size();
      fabric::summarize_completions(done, fr.summary);
      runs.push_back(std::move(fr));
    } else {
      auto r = fabric::run_fabric(*topo, *flows, params_, sync, opts);
      if (!r) return user_error(rank, r.error().message);
      runs.push_back(std::move(r).value());
    }
    if (!runs.back().stats.completed) break;
    STEPSIM_CHECK(runs.back().stats.digest == runs.front().stats.digest,
                  "a repeated fabric run gave a different digest");
  }
  finish_progress();
  const fabric::FabricRun& run =
      runs[median_run(runs.size(), [&](std::size_t i) { return runs[i].stats.wall_s; })];
  const pdes::RunStats& st = run.stats;
  const fabric::FabricSummary& s = run.summary;
  if (rank != 0) return st.completed ? kExitOk : interrupted_exit_code();

  const int cores = ranks * st.threads;
  const double hops_per_s = st.wall_s > 0 ? static_cast<double>(s.packet_hops) / st.wall_s : 0;
  std::int64_t rss_max = 0;
  for (const auto& r : st.per_rank) rss_max = std::max(rss_max, r.peak_rss);
  std::printf("stepsim bench fabric\n");
  std::printf("topology         %s: %zu servers, %zu switches, %zu links, lookahead %s\n",
              topo->name.c_str(), topo->server_count(), topo->switch_count(), topo->links.size(),
              to_string(st.lookahead).c_str());
  std::printf(
      "traffic          %s, %zu flows of %lld B, entropy %s, lb %s, pfc %s, ecn %s, %s, "
      "fidelity %s\n",
      traffic_.pattern.c_str(), flows->size(), static_cast<long long>(traffic_.flow_bytes),
      entropy_.c_str(), (params_.lb.policy + ", " + params_.routing + " routing").c_str(),
      no_pfc_ ? "off" : "on", no_ecn_ ? "off" : "on",
      store_and_forward_ ? "store-and-forward" : "cut-through",
      fidelity_.describe(params_).c_str());
  if (transport_ == "rdma") {
    std::printf("transport        RDMA WRITE, %s B messages, cc %s, %s\n", message_.c_str(),
                cc_.c_str(), retransmission_.c_str());
  }
  if (!params_.faults.empty()) {
    std::printf("faults           %zu scheduled link events, %s\n", params_.faults.size(),
                params_.reroute ? "reroute around down ports" : "no reroute");
  }
  std::printf("engine           ranks %d, threads/rank %d, partition %s\n", ranks, st.threads,
              partition_.c_str());
  if (!st.completed)
    std::printf("status           INTERRUPTED at %s\n", to_string(st.final_time).c_str());
  if (runs.size() > 1) {
    std::printf("repeats          %zu runs, packet-hops/s (M):", runs.size());
    for (const auto& r : runs)
      std::printf(" %.3f", static_cast<double>(r.summary.packet_hops) / r.stats.wall_s / 1e6);
    std::printf("; the median run follows\n");
  }
  std::printf(
      "packet-hops      %" PRIu64 " (%" PRIu64 " events, %.2f events per hop)\n", s.packet_hops,
      st.events,
      s.packet_hops ? static_cast<double>(st.events) / static_cast<double>(s.packet_hops) : 0.0);
  std::printf("wall time        %.3f s\n", st.wall_s);
  std::printf("packet-hops/s    %.3f M total, %.3f M per core (%d cores)\n", hops_per_s / 1e6,
              hops_per_s / 1e6 / cores, cores);
  std::printf("windows          %" PRIu64 " (%.1f events/window)\n", st.windows,
              st.windows ? static_cast<double>(st.events) / static_cast<double>(st.windows) : 0.0);
  std::printf(
      "peak memory      %.1f MiB max rank (process at start %.1f MiB; model state %.1f MiB on rank "
      "0)\n",
      static_cast<double>(rss_max) / 1048576.0, static_cast<double>(rss_before) / 1048576.0,
      static_cast<double>(run.model_bytes) / 1048576.0);
  std::printf(
      "flows            %zu of %zu complete; FCT p50 %.1f us, p99 %.1f us, max %.1f us; last byte "
      "at %.1f us\n",
      s.flows_complete, s.flows, s.fct_p50_us, s.fct_p99_us, s.fct_max_us, s.last_byte_us);
  std::printf("fabric           ECN marks %" PRIu64 ", PAUSE frames %" PRIu64
              ", paused %.1f us (sum over ports), max queue %lld B\n",
              s.ecn_marks, s.pause_frames, static_cast<double>(s.paused_ps) * 1e-6,
              static_cast<long long>(s.max_queue));
  std::printf("drops            buffer %" PRIu64 ", fec %" PRIu64 ", link down %" PRIu64
              ", unroutable %" PRIu64 "; FEC corrected codewords %" PRIu64 "\n",
              s.drops_buffer, s.drops_fec, s.drops_link_down, s.drops_unroutable, s.fec_corrected);
  std::printf("path balance     leaf uplink bytes max/mean %.3f, cv %.3f\n", s.uplink_max_over_mean,
              s.uplink_cv);
  print_time_split(st, 8, /*thread_imbalance=*/st.threads > 1);
  std::printf("digest           %s\n", digest_hex(st.digest).c_str());

  if (!json_path_.empty()) {
    nlohmann::json j;
    j["benchmark"] = "fabric";
    j["topology"] = topo->name;
    j["servers"] = topo->server_count();
    j["switches"] = topo->switch_count();
    j["pattern"] = traffic_.pattern;
    j["flows"] = flows->size();
    j["flow_bytes"] = traffic_.flow_bytes;
    j["lb"] = params_.lb.policy;
    j["fidelity"] = fidelity_.fidelity;
    j["cell_bytes"] = params_.cell.count();
    j["transport"] = transport_;
    if (transport_ == "rdma") j["cc"] = cc_;
    j["ranks"] = ranks;
    j["threads"] = st.threads;
    j["completed"] = st.completed;
    j["packet_hops"] = s.packet_hops;
    j["events"] = st.events;
    j["windows"] = st.windows;
    j["wall_s"] = st.wall_s;
    j["packet_hops_per_s"] = hops_per_s;
    j["packet_hops_per_s_per_core"] = hops_per_s / cores;
    for (const auto& r : runs)
      j["packet_hops_per_s_runs"].push_back(static_cast<double>(r.summary.packet_hops) /
                                            r.stats.wall_s);
    j["peak_rss_max_bytes"] = rss_max;
    j["model_bytes_rank0"] = run.model_bytes;
    j["flows_complete"] = s.flows_complete;
    j["fct_p50_us"] = s.fct_p50_us;
    j["fct_p99_us"] = s.fct_p99_us;
    j["fct_max_us"] = s.fct_max_us;
    j["ecn_marks"] = s.ecn_marks;
    j["pause_frames"] = s.pause_frames;
    j["drops_buffer"] = s.drops_buffer;
    j["uplink_max_over_mean"] = s.uplink_max_over_mean;
    j["digest"] = digest_hex(st.digest);
    if (const int rc = write_json(rank, json_path_, j); rc != kExitOk) return rc;
  }
  return st.completed ? kExitOk : interrupted_exit_code();
}

}  // namespace stepsim::cli
