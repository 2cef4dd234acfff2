#include "src/cli/bench_fabric.hpp"
#include "src/cli/data_dir.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "src/cli/stat_json.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/memory.hpp"
#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/output/samples_h5.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

namespace {

// Options that are shorthands for a fabric.* key (scripts and README use them); `--set
// fabric.KEY=VALUE` reaches every key of `stepsim list fabric`. A flag sets its key to false.
struct Shorthand {
  const char* option;
  const char* key;
  const char* help;
  bool flag;  ///< a flag: sets the key to false
};
constexpr Shorthand kShorthands[] = {
    {"--lb", "fabric.lb", "Load balancing", false},
    {"--flowlet-timeout", "fabric.flowlet_timeout", "flowlet: idle gap (a time)", false},
    {"--routing", "fabric.routing", "Routing (valiant: dragonfly)", false},
    {"--mtu", "fabric.mtu", "Payload bytes per packet", false},
    {"--buffer", "fabric.buffer", "Shared buffer per switch", false},
    {"--ber", "fabric.ber", "Pre-FEC BER on every link (default: the topology's)", false},
    {"--burst", "fabric.burst_symbols",
     "FEC error bursts: symbols each error event corrupts (1 = independent)", false},
    {"--no-fec", "fabric.fec", "No FEC: any bit error loses the frame", true},
    {"--no-reroute", "fabric.reroute", "Drop packets whose chosen port is down", true},
    {"--no-pfc", "fabric.pfc", "Lossy fabric: no PFC (packets beyond the buffer drop)", true},
    {"--no-ecn", "fabric.ecn", "No ECN marking", true},
    {"--store-and-forward", "fabric.cut_through", "Switches wait for the whole packet", true},
};

// The default text of a key (what `stepsim list fabric` prints).
std::string default_of(const config::ParamTable& table, const std::string& key) {
  if (const config::Param* p = table.find(key)) return p->get();
  fatal("bench fabric: no fabric key " + key);
}

bool is_fabric_key(const std::string& assignment) {
  return assignment.rfind("fabric.", 0) == 0;
}

}  // namespace

struct BenchFabricCommand::RdmaSetup {
  nic::NicParams nic;
  std::vector<nic::Connection> conns;
  std::vector<nic::Transfer> transfers;
};

BenchFabricCommand::BenchFabricCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "fabric",
      "Raw traffic over a topology at packet level (before the RDMA layer): permutation, incast, "
      "all_to_all, hotspot or pair flows from NIC to NIC at line rate; prints packet-hops/s and "
      "what the fabric did. Run under mpirun for several ranks.");
  cmd_->add_option("--topology", topology_, "Topology file (topologies/*.yaml)")->required();
  cmd_->add_option("--pattern", traffic_.pattern, list_words(fabric::traffic_patterns()))
      ->capture_default_str()
      ->check(CLI::IsMember(fabric::traffic_patterns()));
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
  fabric::FabricParams defaults;
  const config::ParamTable table = fabric::fabric_param_table(defaults);
  for (const Shorthand& s : kShorthands) {
    if (s.flag) {
      cmd_->add_flag(s.option, shorthand_flags_[s.option],
                     std::string(s.help) + " (= --set " + s.key + "=false)");
      continue;
    }
    std::string& value = shorthand_values_[s.option];
    value = default_of(table, s.key);
    std::string help = s.help;
    // A key with a list of values (fabric.lb: the registry's policies) names them.
    if (const auto allowed = table.choices(s.key); !allowed.empty()) {
      help += ": " + list_words(allowed);
    }
    cmd_->add_option(s.option, value, help + " (= --set " + s.key + "=VALUE)")
        ->capture_default_str();
  }
  fidelity_.add(cmd_, {"packet", "cell"});
  cmd_->add_option("--fault", faults_,
                   "A link fault (repeatable): down:LINK@TIME, up:LINK@TIME, lanes:LINK@TIME=N, "
                   "flap:LINK@START,PERIOD,DOWN,COUNT (LINK: index of the link in the topology, in "
                   "generation order)");
  add_transport_options();
  cmd_->add_option("--end", end_, "Simulated time limit")->capture_default_str();
  cmd_->add_option("--seed", traffic_.seed, "Seed of the traffic and the fabric's random choices")
      ->capture_default_str();
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--partition", partition_,
                   "Partitioner of LPs onto ranks: " + list_words(partition_choices()))
      ->capture_default_str();
  cmd_->add_option("--repeat", repeat_, "Run N times in this process; report the median run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd_->add_option("--json", json_path_,
                   "Also write the results as JSON to this file (with --samples, also every "
                   "port's whole-run counters)");
  cmd_->add_option("--samples", samples_path_,
                   "Write the fabric's time series to this HDF5 file: /nodes, /ports and "
                   "/samples (docs/hdf5-schema.md), appended while the run goes (first run of "
                   "--repeat)");
  cmd_->add_option("--sample-interval", sample_interval_,
                   "--samples: simulated time per bin (10ns..1s; 0 or off: /nodes and /ports "
                   "only)")
      ->capture_default_str();
  cmd_->add_flag("--quiet", quiet_, "No progress output");
  for (CLI::Option* opt : cmd_->get_options()) {
    if (opt->get_name() != "--fault" && opt->get_name() != "--set")
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

void BenchFabricCommand::add_transport_options() {
  cmd_->add_option("--transport", transport_,
                   "raw (flows straight from the NIC port) or rdma (RDMA WRITEs through the NIC "
                   "pipeline and RC transport)")
      ->capture_default_str()
      ->check(CLI::IsMember({"raw", "rdma"}));
  cmd_->add_option("--cc", cc_, "rdma: congestion control (" + list_words(cc_choices()) + ")")
      ->capture_default_str();
  cmd_->add_option("--retransmission", retransmission_,
                   "rdma: retransmission, " + list_words(retransmission_choices()))
      ->capture_default_str();
  cmd_->add_option("--message", message_, "rdma: bytes per WRITE (a flow is several)")
      ->capture_default_str();
  cmd_->add_option("--nic-config", nic_config_,
                   "rdma: YAML file of NIC, transport and congestion-control parameters");
  cmd_->add_option("--set", sets_,
                   "Override one parameter, key=value (repeatable): fabric.* keys (stepsim list "
                   "fabric), and with rdma the NIC keys (stepsim list nic, stepsim list cc)");
}

Result<bool> BenchFabricCommand::configure_fabric() {
  const config::ParamTable table = fabric::fabric_param_table(params_);
  for (const Shorthand& s : kShorthands) {
    if (s.flag ? !shorthand_flags_.at(s.option) : cmd_->count(s.option) == 0) continue;
    const std::string value = s.flag ? "false" : shorthand_values_.at(s.option);
    if (auto ok = table.set(s.key, value); !ok) {
      return Error{std::string(s.option) + ": " + ok.error().message};
    }
  }
  for (const std::string& kv : sets_) {
    if (!is_fabric_key(kv)) {
      if (transport_ == "rdma") continue;  // a NIC key (configure_rdma)
      return Error{"--set " + kv +
                   ": with --transport raw only fabric.* keys apply (stepsim list fabric)"};
    }
    if (auto ok = table.apply(kv); !ok) return Error{"--set " + ok.error().message};
  }
  params_.lb.seed = traffic_.seed;
  params_.seed = traffic_.seed;
  if (auto ok = fidelity_.apply(params_); !ok) return ok.error();
  if (auto ok = params_.validate(); !ok) return ok.error();
  return true;
}

Result<bool> BenchFabricCommand::configure_rdma(const std::vector<fabric::Flow>& flows,
                                                RdmaSetup& rdma) {
  const config::ParamTable table = nic::nic_param_table(rdma.nic);
  if (!nic_config_.empty()) {
    if (auto ok = table.load_yaml_file(nic_config_); !ok) return ok.error();
  }
  for (const auto& [option, key] : {std::pair{"--cc", "cc.algorithm"},
                                    std::pair{"--retransmission", "transport.retransmission"}}) {
    if (cmd_->count(option) == 0 && !nic_config_.empty()) continue;  // the file's value
    const std::string value = cmd_->get_option(option)->as<std::string>();
    if (auto ok = table.set(key, value); !ok) {
      return Error{std::string(option) + ": " + ok.error().message};
    }
  }
  // --cc's default: transport.kind uet picks nscc instead.
  if (cmd_->count("--cc") == 0 && nic_config_.empty()) rdma.nic.cc.algorithm_chosen = false;
  for (const std::string& kv : sets_) {
    if (is_fabric_key(kv)) continue;  // configure_fabric
    if (auto ok = table.apply(kv); !ok) return Error{"--set " + ok.error().message};
  }
  if (auto ok = rdma.nic.validate(); !ok) return ok.error();
  cc_ = rdma.nic.cc.algorithm;
  retransmission_ = rdma.nic.retransmission;
  kind_ = rdma.nic.kind;
  auto message = parse_bytes(message_);
  if (!message || message->count() < 1) {
    return Error{"--message: " +
                 (message ? std::string("must be >= 1 byte") : message.error().message)};
  }
  // Each flow becomes a connection whose side A writes the flow's bytes in messages.
  const std::int64_t m = std::min(message->count(), traffic_.flow_bytes);
  for (const fabric::Flow& f : flows) {
    rdma.conns.push_back(nic::Connection{f.src_nic, f.dst_nic, f.prio, f.entropy, f.label});
    nic::Transfer t;
    t.connection = f.id;
    t.message_bytes = m;
    t.messages = static_cast<int>((traffic_.flow_bytes + m - 1) / m);
    t.depth = 8;
    t.start = f.start;
    rdma.transfers.push_back(t);
  }
  return true;
}

namespace {

// One rdma run: the fabric's counters plus flow completion times from the WRITE completions.
Result<fabric::FabricRun> run_rdma_once(const topology::Topology& topo,
                                        const std::vector<nic::Transfer>& transfers,
                                        const std::vector<nic::Connection>& conns,
                                        const nic::NicParams& nic,
                                        const fabric::FabricParams& params, pdes::Sync& sync,
                                        const pdes::EngineOptions& opts,
                                        fabric::FabricSamples* samples) {
  nic::BulkApp app(transfers, conns, topo, SimTime::zero());
  auto r = nic::run_rdma(topo, conns, nic, params, &app, sync, opts, nullptr, samples);
  if (!r) return r.error();
  fabric::FabricRun fr;
  fr.stats = r->stats;
  fr.results = std::move(r->fabric);
  fr.summary = r->summary;
  const nic::RdmaSummary totals = nic::summarize(r->rdma);
  fr.summary.retransmitted = totals.qp.retransmitted;
  fr.summary.nacks = totals.qp.nacks_received;
  fr.summary.timeouts = totals.qp.timeouts;
  fr.summary.duplicates = totals.qp.duplicates;
  fr.summary.sack_losses = totals.qp.sack_losses;
  const nic::BulkResult b = app.result(sync);
  std::vector<std::pair<std::int64_t, std::int64_t>> done;
  for (std::size_t t = 0; t < transfers.size(); ++t) {
    if (b.done_ps[t] >= 0) done.emplace_back(transfers[t].start.picoseconds(), b.done_ps[t]);
  }
  fr.summary.flows = transfers.size();
  fabric::summarize_completions(done, fr.summary);
  return fr;
}

// Every flow delivered its last byte (a run that ends with flows left did not complete).
bool all_flows_complete(const fabric::FabricRun& run) {
  return run.summary.flows_complete == run.summary.flows;
}

}  // namespace

Result<bool> BenchFabricCommand::parse_inputs(int rank, Inputs& in) {
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", json_path_);
  add_output(outputs, *cmd_, "--samples", samples_path_);
  if (auto ok = check_outputs_once(outputs, {topology_, nic_config_}, rank); !ok) return ok;
  auto bytes = parse_bytes(flow_bytes_);
  if (!bytes) return Error{"--flow-bytes: " + bytes.error().message};
  auto end = parse_time(end_);
  if (!end) return Error{"--end: " + end.error().message};
  auto interval = fabric::parse_sample_interval(sample_interval_);
  if (!interval) return Error{"--sample-interval: " + interval.error().message};
  auto window = parse_bytes(window_);
  if (!window) return Error{"--window: " + window.error().message};
  traffic_.window = window->count();
  auto entropy = fabric::parse_entropy(entropy_);
  if (!entropy) return Error{"--entropy: " + entropy.error().message};
  traffic_.flow_bytes = bytes->count();
  traffic_.entropy = *entropy;
  in.end = *end;
  in.sample_interval = *interval;
  return configure_fabric();
}

Result<bool> BenchFabricCommand::check_topology(const topology::Topology& topo, int ranks) {
  if (auto ok = check_fabric_memory(topo, ranks); !ok) return ok;
  for (const std::string& f : faults_) {
    if (auto ok = fabric::parse_fault(f, topo, params_.faults); !ok) {
      return Error{"--fault: " + ok.error().message};
    }
  }
  return fabric::check_switch_buffer(params_, topo);
}

Result<std::vector<fabric::FabricRun>> BenchFabricCommand::run_repeats(
    const topology::Topology& topo, const std::vector<fabric::Flow>& flows, const RdmaSetup& rdma,
    pdes::Sync& sync, const pdes::EngineOptions& opts, SimTime sample_interval) {
  // --samples: the name tables now, the time series while the first run goes.
  std::unique_ptr<output::SamplesFile> samples_file;
  std::unique_ptr<fabric::FabricSamples> sampler;
  pdes::EngineOptions sampled = opts;
  if (!samples_path_.empty()) {
    auto f = output::SamplesFile::create(samples_path_, "--samples", topo, sample_interval,
                                         MPI_COMM_WORLD);
    if (!f) return f.error();
    samples_file = std::move(f).value();
    if (output::SamplesH5* h5 = samples_file->samples()) {
      sampler = std::make_unique<fabric::FabricSamples>(sample_interval);
      sampled.at_window = [h5, s = sampler.get()](SimTime now, bool last) {
        h5->at_window(*s, now, last);
      };
    }
  }
  std::vector<fabric::FabricRun> runs;
  for (int i = 0; i < repeat_; ++i) {
    fabric::FabricSamples* samples = i == 0 ? sampler.get() : nullptr;
    const pdes::EngineOptions& o = i == 0 ? sampled : opts;
    auto r = transport_ == "rdma" ? run_rdma_once(topo, rdma.transfers, rdma.conns, rdma.nic,
                                                  params_, sync, o, samples)
                                  : fabric::run_fabric(topo, flows, params_, sync, o, samples);
    if (!r) return r.error();
    if (i == 0 && sampler) {
      const output::SamplesH5& h5 = *samples_file->samples();
      samples_report_ =
          SamplesReport{h5.rows_written(), h5.appends(), h5.batch_bins(),
                        r->stats.per_rank.empty() ? 0.0 : r->stats.per_rank[0].hook_s};
      // The runs' results stand: the summary is printed, then this error (exit 2).
      if (h5.error()) {
        samples_error_ = Error{"--samples: '" + samples_path_ + "': " + h5.error()->message};
      }
    }
    runs.push_back(std::move(r).value());
    if (!runs.back().stats.completed || !all_flows_complete(runs.back())) break;
    STEPSIM_CHECK(runs.back().stats.digest == runs.front().stats.digest,
                  "a repeated fabric run gave a different digest");
  }
  finish_progress();
  if (samples_file) {
    if (auto ok = samples_file->close(); !ok && !samples_error_) samples_error_ = ok.error();
  }
  return runs;
}

int BenchFabricCommand::execute(int rank, int ranks) {
  Inputs in;
  if (auto ok = parse_inputs(rank, in); !ok) return user_error(rank, ok.error().message);
  const std::int64_t rss_before = current_rss_bytes();
  // The estimate from the topology's counts first: a huge one is refused before it is built.
  auto topo = load_topology_within_memory(find_data_file(topology_, "topologies"), ranks, true);
  if (!topo) return user_error(rank, not_found_note(topo.error(), topology_, "topologies").message);
  if (auto ok = check_topology(*topo, ranks); !ok) return user_error(rank, ok.error().message);
  auto flows = fabric::make_flows(*topo, traffic_);
  if (!flows) return user_error(rank, "traffic: " + flows.error().message);
  RdmaSetup rdma;
  if (transport_ == "rdma") {
    if (auto ok = configure_rdma(*flows, rdma); !ok) return user_error(rank, ok.error().message);
  }

  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  pdes::EngineOptions opts;
  opts.threads = threads_;
  opts.end = in.end;
  opts.partitioner = partition_;
  if (!quiet_) {
    opts.progress_every = progress_interval();
    opts.on_progress = print_progress;
  }
  install_stop_handlers();
  warn_if_threads_exceed_cpus(threads_, rank);
  auto runs = run_repeats(*topo, *flows, rdma, sync, opts, in.sample_interval);
  if (!runs) return user_error(rank, runs.error().message);
  const fabric::FabricRun& run =
      (*runs)[median_run(runs->size(), [&](std::size_t i) { return (*runs)[i].stats.wall_s; })];
  const bool complete = run.stats.completed && all_flows_complete(run);
  const int rc = samples_error_         ? kExitUserError
                 : !run.stats.completed ? interrupted_exit_code()
                 : complete             ? kExitOk
                                        : kExitFailure;
  if (rank != 0) return rc;
  print_report(*topo, flows->size(), *runs, run, ranks, rss_before);
  if (run.stats.completed && !complete) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "stepsim: error: %zu of %zu flows did not complete by %s (stalled or lost "
                 "packets; see pause frames and drops above)\n",
                 run.summary.flows - run.summary.flows_complete, run.summary.flows,
                 to_string(run.stats.final_time).c_str());
  }
  if (!json_path_.empty()) {
    if (const int j = write_json_report(rank, *topo, flows->size(), *runs, run, ranks);
        j != kExitOk)
      return j;
  }
  if (samples_error_) {
    std::fflush(stdout);
    return user_error(rank, samples_error_->message);
  }
  return rc;
}

void BenchFabricCommand::print_report(const topology::Topology& topo, std::size_t flows,
                                      const std::vector<fabric::FabricRun>& runs,
                                      const fabric::FabricRun& run, int ranks,
                                      std::int64_t rss_before) const {
  const pdes::RunStats& st = run.stats;
  const fabric::FabricSummary& s = run.summary;
  const int cores = ranks * st.threads;
  const double hops_per_s = st.wall_s > 0 ? static_cast<double>(s.packet_hops) / st.wall_s : 0;
  std::int64_t rss_max = 0;
  for (const auto& r : st.per_rank) rss_max = std::max(rss_max, r.peak_rss);
  std::printf("stepsim bench fabric\n");
  std::printf("topology         %s: %zu servers, %zu switches, %zu links, lookahead %s\n",
              topo.name.c_str(), topo.server_count(), topo.switch_count(), topo.links.size(),
              to_string(st.lookahead).c_str());
  std::printf(
      "traffic          %s, %zu flows of %lld B, entropy %s, lb %s, pfc %s, ecn %s, %s, "
      "fidelity %s\n",
      traffic_.pattern.c_str(), flows, static_cast<long long>(traffic_.flow_bytes),
      entropy_.c_str(), (params_.lb.policy + ", " + params_.routing + " routing").c_str(),
      params_.pfc.enabled ? "on" : "off", params_.ecn.enabled ? "on" : "off",
      params_.sw.cut_through ? "cut-through" : "store-and-forward",
      fidelity_.describe(params_).c_str());
  if (transport_ == "rdma" && kind_ == "uet") {
    std::printf(
        "transport        UET-style RDMA WRITE, %s B messages, cc %s, unordered delivery, "
        "per-packet entropy, SACK loss detection\n",
        message_.c_str(), cc_.c_str());
  } else if (transport_ == "rdma") {
    std::printf("transport        RDMA WRITE, %s B messages, cc %s, %s\n", message_.c_str(),
                cc_.c_str(),
                nic::resolve_retransmission(retransmission_, params_.lb.policy).c_str());
  }
  if (!params_.faults.empty()) {
    std::printf("faults           %zu scheduled link events, %s\n", params_.faults.size(),
                params_.reroute ? "reroute around down ports" : "no reroute");
  }
  std::printf("engine           ranks %d, threads/rank %d, partition %s\n", ranks, st.threads,
              partition_.c_str());
  if (!st.completed)
    std::printf("status           INTERRUPTED at %s\n", to_string(st.final_time).c_str());
  if (st.completed && s.flows_complete != s.flows) {
    std::printf("status           INCOMPLETE: %zu of %zu flows did not complete\n",
                s.flows - s.flows_complete, s.flows);
  }
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
  print_fabric_lines(s);
  if (transport_ == "rdma" && (kind_ == "uet" || params_.trimming)) {
    std::printf("recovery         trimming %s: %" PRIu64 " packets trimmed, %" PRIu64
                " NACKs, %" PRIu64 " retransmitted, %" PRIu64 " timeouts",
                params_.trimming ? "on" : "off", s.trimmed, s.nacks, s.retransmitted, s.timeouts);
    if (kind_ == "uet") {
      std::printf("; %" PRIu64 " holes found by SACK, %" PRIu64 " packets arrived twice",
                  s.sack_losses, s.duplicates);
    }
    std::printf("\n");
  }
  print_time_split(st, 8, /*thread_imbalance=*/st.threads > 1);
  if (!samples_path_.empty() && samples_report_.batch_bins == 0) {
    std::printf("samples          %s: /nodes and /ports only (--sample-interval %s)\n",
                samples_path_.c_str(), sample_interval_.c_str());
  } else if (!samples_path_.empty()) {
    const SamplesReport& x = samples_report_;
    std::printf("samples          %s: %" PRIu64 " rows every %s in %" PRIu64
                " appends (one per %" PRIu64 " bins); %.3f s in the window hook on rank 0\n",
                samples_path_.c_str(), x.rows, sample_interval_.c_str(), x.appends, x.batch_bins,
                x.hook_s);
  }
  std::printf("digest           %s\n", digest_hex(st.digest).c_str());
}

void BenchFabricCommand::print_fabric_lines(const fabric::FabricSummary& s) {
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
}

int BenchFabricCommand::write_json_report(int rank, const topology::Topology& topo,
                                          std::size_t flows,
                                          const std::vector<fabric::FabricRun>& runs,
                                          const fabric::FabricRun& run, int ranks) const {
  const pdes::RunStats& st = run.stats;
  const fabric::FabricSummary& s = run.summary;
  const int cores = ranks * st.threads;
  const double hops_per_s = st.wall_s > 0 ? static_cast<double>(s.packet_hops) / st.wall_s : 0;
  std::int64_t rss_max = 0;
  for (const auto& r : st.per_rank) rss_max = std::max(rss_max, r.peak_rss);
  nlohmann::json j;
  j["benchmark"] = "fabric";
  j["topology"] = topo.name;
  j["servers"] = topo.server_count();
  j["switches"] = topo.switch_count();
  j["pattern"] = traffic_.pattern;
  j["flows"] = flows;
  j["flow_bytes"] = traffic_.flow_bytes;
  j["lb"] = params_.lb.policy;
  j["routing"] = params_.routing;
  j["fidelity"] = fidelity_.fidelity;
  j["cell_bytes"] = params_.cell.count();
  j["transport"] = transport_;
  if (transport_ == "rdma") j["cc"] = cc_;
  if (transport_ == "rdma") j["transport_kind"] = kind_;
  j["trimmed"] = s.trimmed;
  j["retransmitted"] = s.retransmitted;
  j["nacks"] = s.nacks;
  j["timeouts"] = s.timeouts;
  j["duplicates"] = s.duplicates;
  j["sack_losses"] = s.sack_losses;
  j["ranks"] = ranks;
  j["threads"] = st.threads;
  // Completed: the engine was not interrupted and every flow delivered its last byte.
  j["completed"] = st.completed && all_flows_complete(run);
  j["interrupted"] = !st.completed;
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
  j["flows_incomplete"] = s.flows - s.flows_complete;
  j["fct_p50_us"] = s.fct_p50_us;
  j["fct_p99_us"] = s.fct_p99_us;
  j["fct_max_us"] = s.fct_max_us;
  j["ecn_marks"] = s.ecn_marks;
  j["pause_frames"] = s.pause_frames;
  j["drops_buffer"] = s.drops_buffer;
  j["uplink_max_over_mean"] = s.uplink_max_over_mean;
  j["digest"] = digest_hex(st.digest);
  if (!samples_path_.empty()) {
    // What /samples adds up to: every port that sent, paused, was paused or lost a packet.
    j["samples_rows"] = samples_report_.rows;
    j["end_ps"] = st.final_time.picoseconds();
    nlohmann::json ports = nlohmann::json::array();
    for (std::size_t p = 0; p < run.results.ports.size(); ++p) {
      const fabric::PortStats& x = run.results.ports[p];
      if (!x.used() && x.paused_ps == 0 && x.max_queue == 0) continue;
      nlohmann::json row = stat_json(x);  // every declared PortStats statistic
      row["port"] = p;
      row["drops"] = x.drops();
      ports.push_back(std::move(row));
    }
    j["ports"] = std::move(ports);
  }
  return write_json(rank, json_path_, j);
}

}  // namespace stepsim::cli
