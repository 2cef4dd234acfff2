#include "src/cli/bench_nccl.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "src/cli/bench_nccl_types.hpp"
#include "src/cli/bench_output.hpp"
#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/data_dir.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/collective/iterations.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {
namespace {

// Iterations simulated per size at most (-w + -n x -m): each holds its own collective's state.
constexpr int kMaxIterations = 10000;

using collective::Kind;

}  // namespace

std::vector<std::string> nccl_datatype_names() {
  std::vector<std::string> out;
  for (const NcclDataType& t : kNcclDataTypes) out.emplace_back(t.name);
  return out;
}

std::vector<std::string> nccl_op_names() {
  return {kNcclOps.begin(), kNcclOps.end()};
}

BenchNcclCommand::BenchNcclCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "nccl",
      "nccl-tests on the simulated GPUs, NVLink, NICs and fabric: one collective per size, "
      "printed as nccl-tests prints it (out-of-place and in-place columns; every other line "
      "starts with '#'). Takes nccl-tests' flags. Default fabric: "
      "topologies/rail-128gpu-800g.yaml, "
      "no congestion control, ECMP (bench perftest: the 1.6T two-server toy; a scenario names "
      "its own topology and cc).");
  cmd_->add_option("collective", kind_,
                   "allreduce, allgather, reducescatter, alltoall, broadcast, reduce or sendrecv; "
                   "or DeepEP's expert-parallel kernels (size: one GPU's tokens x bytes per token; "
                   "routing: coll.ep.*): ep_dispatch, ep_combine (normal), ep_dispatch_ll, "
                   "ep_combine_ll (low latency)")
      ->required()
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast",
                             "reduce", "sendrecv", "ep_dispatch", "ep_combine", "ep_dispatch_ll",
                             "ep_combine_ll"}));
  add_nccl_tests_flags();
  add_accepted_flags();
  add_sim_options();
  last_value_wins(*cmd_);
}

void BenchNcclCommand::add_nccl_tests_flags() {
  NcclTestsFlags& f = flags_;
  cmd_->add_option("-b,--minbytes", f.min_bytes,
                   "Smallest size. As nccl-tests: K, M, G are powers of 1024 (1G = 1 GiB); "
                   "stepsim's units also work (1GiB = 2^30 B, 1GB = 10^9 B)")
      ->capture_default_str();
  cmd_->add_option("-e,--maxbytes", f.max_bytes, "Largest size")->capture_default_str();
  cmd_->add_option("-i,--stepbytes", f.step_bytes, "Linear increment between sizes (without -f)")
      ->capture_default_str();
  cmd_->add_option("-f,--stepfactor", f.step_factor,
                   "Multiplication factor between sizes (default: linear steps of -i)")
      ->check(finite_range(1.01, 1024.0));
  cmd_->add_option("-t,--nthreads", f.threads,
                   "nccl-tests threads per process: the GPUs are --np x -t x -g, as nccl-tests "
                   "counts them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("-g,--ngpus", f.gpus_per_thread, "nccl-tests GPUs per thread (see -t)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("-n,--iters", f.iters,
                   "Timed iterations per size. Given (or -w, -m), each size simulates -w warm-up "
                   "then -n x -m timed iterations back to back in one run, and time is the timed "
                   "ones' average; without them one iteration is simulated (on an idle fabric "
                   "each is the same) and the header says so")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxIterations));
  cmd_->add_option("-w,--warmup_iters", f.warmup_iters,
                   "Warm-up iterations per size, simulated but not timed (see -n)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxIterations));
  cmd_->add_option("-m,--agg_iters", f.agg_iters,
                   "Operations per timed iteration: -m collectives back to back (each with its "
                   "launch latency; NCCL's group saves part of it), time divided by -n x -m")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxIterations));
  cmd_->add_option("-c,--check", f.check,
                   "Check iterations: 0 prints N/A in #wrong; otherwise #wrong counts the "
                   "elements that never arrived")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd_->add_option("-a,--average", f.average,
                   "Time over the GPUs, each from the timed iterations' start to its own last "
                   "completion: 0 rank 0's, 1 average, 2 min, 3 max (default, when -a is not "
                   "given: the last GPU's, the collective's completion)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  cmd_->add_option("-z,--blocking", f.blocking,
                   "Blocking collectives, 0 or 1 (printed; either way a server starts its next "
                   "iteration when its GPUs finished the last, the host barrier is not modelled)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1));
  cmd_->add_option("-o,--op", f.op,
                   "Reduction: " + list_words(nccl_op_names()) +
                       " (redop column), or all: one sweep of the sizes per op")
      ->capture_default_str();
  cmd_->add_option("-d,--datatype", f.datatype,
                   "Data type: " + list_words(nccl_datatype_names()) +
                       " (element size: sizes are whole elements, count column), or all: one "
                       "sweep per type")
      ->capture_default_str();
  cmd_->add_option("-r,--root", f.root, "Root rank (broadcast, reduce)")->capture_default_str();
  cmd_->add_option("-J,--json,--output_file", sim_.json_path,
                   "Also write the results as JSON to this file");
}

// nccl-tests' flags that change nothing the simulation models: accepted, each printing a note.
void BenchNcclCommand::add_accepted_flags() {
  NcclTestsFlags& f = flags_;
  const auto zero_one = CLI::Range(0, 1);
  cmd_->add_option("-p,--parallel_init", f.parallel_init,
                   "0 or 1: NCCL's initialisation is not simulated (a note)")
      ->check(zero_one);
  cmd_->add_option("-G,--cudagraph", f.cudagraph,
                   "CUDA graph launches: not modelled, each collective keeps its launch latency "
                   "(a note)")
      ->check(CLI::Range(0, 1 << 20));
  cmd_->add_option("-C,--report_cputime", f.report_cputime,
                   "0 or 1: there is no host CPU simulated, time is the GPUs' (a note)")
      ->check(zero_one);
  cmd_->add_option("-T,--timeout", f.timeout,
                   "Seconds of wall-clock time: not applied, --end bounds each size's simulated "
                   "time (a note)")
      ->check(CLI::Range(0, 1 << 30));
  cmd_->add_option("-N,--run_cycles", f.run_cycles,
                   "Cycles (0: forever): every cycle is the same deterministic simulation, one is "
                   "run and printed (a note)")
      ->check(CLI::Range(0, 1 << 30));
  cmd_->add_option("-R,--local_register", f.local_register,
                   "0, 1 or 2: buffer registration is not modelled (a note)")
      ->check(CLI::Range(0, 2));
  cmd_->add_option("-y,--stream_null", f.stream_null,
                   "0 or 1: CUDA streams are not modelled (a note)")
      ->check(zero_one);
}

void BenchNcclCommand::add_sim_options() {
  NcclSimOptions& o = sim_;
  cmd_->add_option("--topology", o.topology,
                   "Topology file (default: topologies/rail-128gpu-800g.yaml of the data files; a "
                   "scenario names its own)");
  cmd_->add_option("--gpus", o.gpus,
                   "GPUs in the communicator, the first servers' (default: --np x -t x -g when "
                   "one of them is given, else 16)");
  cmd_->add_option("--np", o.procs,
                   "nccl-tests' MPI processes: `mpirun -np 16 all_reduce_perf -g 1` is `--np 16 "
                   "-g 1` (16 GPUs). stepsim's own mpirun -n only splits the simulation")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("--algo", o.algo,
                   "Algorithm: " + list_words(algorithm_choices()) +
                       " (auto: NCCL's tuner among the algorithms that run the collective, per "
                       "size; AllToAll is pairwise). Given, it forces one as NCCL_ALGO does; "
                       "without it NCCL_ALGO from the environment is honoured")
      ->capture_default_str();
  cmd_->add_option("--gpu", o.gpu,
                   "GPU: " + list_words(gpu_choices()) + " (NVLink rate and efficiency)")
      ->capture_default_str();
  cmd_->add_option("--proto", o.proto,
                   "Protocol: " + list_words(protocol_choices()) +
                       " (auto: the tuner). Given, it forces one as NCCL_PROTO does; without it "
                       "NCCL_PROTO is honoured")
      ->capture_default_str();
  cmd_->add_option("--channels", o.channels,
                   "Channels (rings); without it NCCL_NCHANNELS, NCCL_MIN_NCHANNELS and "
                   "NCCL_MAX_NCHANNELS are honoured")
      ->capture_default_str();
  cmd_->add_option("--cc", o.cc,
                   "Congestion control of the NICs: " + list_words(cc_choices()) +
                       " (default none, an idle fabric as nccl-tests sees it; a scenario's NICs "
                       "run dcqcn unless it says otherwise)")
      ->capture_default_str();
  cmd_->add_option("--lb", o.lb, "Load balancing: " + list_words(lb_choices()))
      ->capture_default_str();
  o.fidelity.add(cmd_, {"packet", "cell", "analytical"});
  cmd_->add_option("--nic-config", o.nic_config, "YAML file of NIC/transport/CC parameters");
  cmd_->add_option("--set", o.sets,
                   "Override a parameter, key=value (coll.*, gpu.*, nic.*, transport.*, cc.*, "
                   "fabric.*; repeatable)");
  cmd_->add_option("--end", o.end, "Simulated time limit per size")->capture_default_str();
  cmd_->add_option("--threads", o.threads, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--partition", o.partition,
                   "Partitioner of LPs onto ranks: " + list_words(partition_choices()) +
                       " (metis: weighted by the collective's traffic)")
      ->capture_default_str();
  cmd_->add_flag("--quiet", o.quiet, "No progress output");
}

Result<bool> BenchNcclCommand::load_parameters(Setup& s) const {
  const config::ParamTable coll_table = collective::collective_param_table(s.cp);
  const config::ParamTable nic_table = nic::nic_param_table(s.nic);
  const config::ParamTable fabric_table = fabric::fabric_param_table(s.fp);
  if (!sim_.nic_config.empty()) {
    if (auto ok = nic_table.load_yaml_file(sim_.nic_config); !ok) return ok.error();
  }
  // The command line forces; without it NCCL's environment does, as NCCL reads it.
  const NcclEnv& env = s.env;
  const std::string algo = given("--algo") || !env.algo ? sim_.algo : *env.algo;
  const std::string proto = given("--proto") || !env.proto ? sim_.proto : *env.proto;
  const int channels = given("--channels") ? sim_.channels : env.channels_or(sim_.channels);
  const std::array<std::pair<const char*, std::string>, 4> shorthands{
      {{"gpu.model", sim_.gpu},
       {"coll.algorithm", algo},
       {"coll.protocol", proto},
       {"coll.channels", std::to_string(channels)}}};
  const std::array<const char*, 4> sources{
      "--gpu", given("--algo") || !env.algo ? "--algo" : "NCCL_ALGO",
      given("--proto") || !env.proto ? "--proto" : "NCCL_PROTO",
      given("--channels") || (!env.channels && !env.min_channels && !env.max_channels)
          ? "--channels"
          : "NCCL_NCHANNELS"};
  for (std::size_t i = 0; i < shorthands.size(); ++i) {
    if (auto ok = coll_table.set(shorthands[i].first, shorthands[i].second); !ok) {
      return Error{std::string(sources[i]) + ": " + ok.error().message};
    }
  }
  if (env.collnet) s.cp.sharp_enable = *env.collnet;
  // A list or an exclusion leaves the choice to the tuner, among what it allows (--algo and
  // --proto force as before).
  if (!given("--algo")) s.cp.tuner_excluded_algorithms = env.algo_excluded;
  if (!given("--proto")) s.cp.tuner_excluded_protocols = env.proto_excluded;
  // NCCL_NVLS_ENABLE=0: the tuner has no NVLS candidate, as on a GPU without NVLink SHARP.
  const bool nvls_off = env.nvls && *env.nvls == 0;
  if (given("--cc") || sim_.nic_config.empty()) {
    if (auto ok = nic_table.set("cc.algorithm", sim_.cc); !ok) {
      return Error{"--cc: " + ok.error().message};
    }
    s.nic.cc.algorithm_chosen = given("--cc");  // the default: transport.kind uet may pick nscc
  }
  s.fp.lb.policy = sim_.lb;
  for (const std::string& kv : sim_.sets) {
    const bool coll = kv.rfind("coll.", 0) == 0 || kv.rfind("gpu.", 0) == 0;
    const bool fabric = kv.rfind("fabric.", 0) == 0;
    auto ok = coll ? coll_table.apply(kv) : fabric ? fabric_table.apply(kv) : nic_table.apply(kv);
    if (!ok) return Error{"--set " + ok.error().message};
  }
  if (nvls_off) {
    if (s.cp.algorithm.rfind("nvls", 0) == 0) {
      return Error{std::string(sources[1]) + ": " + s.cp.algorithm +
                   " uses NVLS, which NCCL_NVLS_ENABLE=0 turns off"};
    }
    s.cp.nvls_efficiency = 0;
  }
  if (auto ok = s.cp.validate(); !ok) return ok.error();
  if (auto ok = s.nic.validate(); !ok) return ok.error();
  if (auto ok = sim_.fidelity.apply(s.fp); !ok) return ok.error();
  if (auto ok = s.fp.validate(); !ok) return ok.error();
  return true;
}

// nccl-tests' sizes: from -b to -e times -f, or plus -i without -f; each rounded down to whole
// elements (and, for the split collectives, to a multiple of the ranks). One sweep per data type
// and op: -d all and -o all run every one, types outermost, as nccl-tests does.
Result<bool> BenchNcclCommand::sweep(Setup& s) const {
  const std::pair<const char*, const std::string*> texts[] = {{"--minbytes", &flags_.min_bytes},
                                                              {"--maxbytes", &flags_.max_bytes},
                                                              {"--stepbytes", &flags_.step_bytes}};
  std::int64_t* out[] = {&s.lo, &s.hi, &s.step};
  for (std::size_t i = 0; i < 3; ++i) {
    auto v = parse_binary_size(*texts[i].second);
    if (!v) return Error{std::string(texts[i].first) + ": " + v.error().message};
    *out[i] = *v;
  }
  if (s.hi < s.lo) return Error{"--minbytes/--maxbytes: need minbytes <= maxbytes"};
  const bool linear = flags_.step_factor <= 1;
  if (linear && s.step < 1 && s.hi > s.lo) return Error{"--stepbytes: must be >= 1 byte"};
  const double n = linear ? (s.step > 0 ? static_cast<double>(s.hi - s.lo) / s.step : 0)
                          : std::log(static_cast<double>(s.hi) / std::max<double>(1, s.lo)) /
                                std::log(flags_.step_factor);
  if (n > 100000) {
    return Error{"--minbytes/--maxbytes/--stepbytes: " + std::to_string(std::llround(n)) +
                 " sizes (allowed: up to 100000)"};
  }
  std::vector<NcclDataType> types;
  for (const NcclDataType& t : kNcclDataTypes) {
    if (flags_.datatype == "all" || flags_.datatype == t.name) types.push_back(t);
  }
  if (types.empty()) {
    std::vector<std::string> allowed = nccl_datatype_names();
    allowed.emplace_back("all");
    return Error{"--datatype: '" + flags_.datatype +
                 "' is not a type (allowed: " + list_words(allowed) + ")"};
  }
  std::vector<std::string> ops;
  for (const char* o : kNcclOps) {
    if (flags_.op == "all" || flags_.op == o) ops.emplace_back(o);
  }
  if (ops.empty()) {
    std::vector<std::string> allowed = nccl_op_names();
    allowed.emplace_back("all");
    return Error{"--op: '" + flags_.op + "' is not an op (allowed: " + list_words(allowed) + ")"};
  }
  if (!reduces(s.kind)) ops = {"none"};
  for (const NcclDataType& t : types) {
    for (const std::string& op : ops) {
      NcclSweep w{t.name, t.bytes, op, {}};
      const std::int64_t unit = split(s.kind) ? std::int64_t{t.bytes} * s.gpus : t.bytes;
      for (double x = static_cast<double>(s.lo); x <= static_cast<double>(s.hi) * 1.0000001;) {
        const std::int64_t b = static_cast<std::int64_t>(x) / unit * unit;
        if (w.sizes.empty() || b != w.sizes.back()) w.sizes.push_back(b);
        if (linear) {
          if (s.step < 1) break;
          x += static_cast<double>(s.step);
        } else {
          if (x <= 0) break;
          x *= flags_.step_factor;
        }
      }
      s.sweeps.push_back(std::move(w));
    }
  }
  return true;
}

Result<bool> BenchNcclCommand::check_iterations(Setup& s) const {
  s.iterate = given("--iters") || given("--warmup_iters") || given("--agg_iters");
  if (!s.iterate) return true;
  s.warmup = flags_.warmup_iters;
  s.timed = flags_.iters * flags_.agg_iters;
  const std::int64_t total = std::int64_t{flags_.iters} * flags_.agg_iters + flags_.warmup_iters;
  if (total > kMaxIterations) {
    return Error{"--iters/--warmup_iters/--agg_iters: " + std::to_string(total) +
                 " iterations per size (allowed: -w + -n x -m up to " +
                 std::to_string(kMaxIterations) + ")"};
  }
  return true;
}

Result<BenchNcclCommand::Setup> BenchNcclCommand::prepare(int ranks) const {
  Setup s;
  auto kind = collective::parse_kind(kind_);
  if (!kind) return kind.error();
  s.kind = *kind;
  // nccl-tests' count: processes x threads x GPUs per thread.
  const bool nccl_ranks = given("--ngpus") || given("--nthreads") || given("--np");
  s.procs = sim_.procs;
  s.gpus = sim_.gpus > 0 ? sim_.gpus
           : nccl_ranks  ? sim_.procs * flags_.threads * flags_.gpus_per_thread
                         : 16;
  if (given("--gpus") && sim_.gpus < 1) return Error{"--gpus: must be >= 1"};
  auto end = parse_time(sim_.end);
  if (!end) return Error{"--end: " + end.error().message};
  s.end = *end;
  const std::string path = sim_.topology.empty() ? data_dir() + "/topologies/rail-128gpu-800g.yaml"
                                                 : find_data_file(sim_.topology, "topologies");
  auto topo = load_topology_within_memory(path, ranks, true);
  if (!topo) return not_found_note(topo.error(), sim_.topology, "topologies");
  s.topo = std::move(topo).value();
  auto comm = collective::make_communicator(s.topo, s.gpus);
  if (!comm) return comm.error();
  s.comm = std::move(comm).value();
  const int servers = static_cast<int>(
      (static_cast<std::uint32_t>(s.gpus) + s.comm.gpus_per_server - 1) / s.comm.gpus_per_server);
  auto env = read_nccl_env(servers);
  if (!env) return env.error();
  s.env = std::move(env).value();
  if (auto ok = load_parameters(s); !ok) return ok.error();
  if (flags_.root < 0 || flags_.root >= s.gpus) {
    return Error{"--root " + std::to_string(flags_.root) + " is not a rank (0.." +
                 std::to_string(s.gpus - 1) + ")"};
  }
  if (auto ok = check_iterations(s); !ok) return ok.error();
  if (auto p = pdes::make_partitioner(sim_.partition); !p) {
    return Error{"--partition: " + p.error().message};
  }
  if (auto ok = sweep(s); !ok) return ok.error();
  return s;
}

namespace {

// nccl-tests' time of one iteration (ps): each GPU's time from `t0` (the timed iterations'
// start) to its own completion of the last iteration, over `timed` iterations, combined over the
// GPUs as -a says (0 rank 0's, 1 the average, 2 the minimum, 3 the maximum; -1, -a not given:
// the last GPU's, which is the collective's completion). GPUs that never finished do not count.
double iteration_time_ps(const std::vector<std::int64_t>& done, std::int64_t t0, int timed,
                         int average) {
  double sum = 0;
  double lo = 0;
  double hi = 0;
  int n = 0;
  for (std::int64_t d : done) {
    if (d < 0) continue;
    const double x = static_cast<double>(d - t0) / timed;
    lo = n == 0 ? x : std::min(lo, x);
    hi = n == 0 ? x : std::max(hi, x);
    sum += x;
    ++n;
  }
  switch (average) {
    case 0:
      return !done.empty() && done[0] >= 0 ? static_cast<double>(done[0] - t0) / timed : 0;
    case 1:
      return n > 0 ? sum / n : 0;
    case 2:
      return lo;
    default:
      return hi;
  }
}

}  // namespace

// Simulates one size (packet or cell level) into `row`, adding to the totals; `extra` gets the
// JSON fields only a simulation has. Returns whether the engine ran to the end. With -n/-w/-m,
// the warm-up and timed iterations run back to back in one run; the time is the timed ones'.
Result<bool> BenchNcclCommand::simulate_size(const Setup& s, Row& row, Totals& t,
                                             nlohmann::json& extra, pdes::Sync& sync,
                                             const pdes::EngineOptions& opts) const {
  collective::CollectiveSpec spec;
  spec.kind = s.kind;
  spec.bytes = row.bytes;
  spec.root = flags_.root;
  collective::IteratedRun r;
  if (s.iterate) {
    auto run = collective::run_collective_iterations(s.topo, s.comm, spec, s.cp, s.nic, s.fp,
                                                     s.warmup + s.timed, sync, opts);
    if (!run) return run.error();
    r = std::move(run).value();
  } else {
    auto run = collective::run_collective(s.topo, s.comm, spec, s.cp, s.nic, s.fp, sync, opts);
    if (!run) return run.error();
    r.results.push_back(std::move(run->result));
    r.rdma = std::move(run->rdma);
    r.choice = std::move(run->choice);
  }
  t.digest = hash_combine(t.digest, r.rdma.stats.digest);
  for (const collective::CollectiveResult& x : r.results) {
    for (std::int64_t done : x.gpu_done_ps) {
      t.digest = hash_combine(t.digest, static_cast<std::uint64_t>(done));
    }
  }
  // The last iteration: which GPUs finished, and when the timed iterations began (the first
  // server to start them; 0 without warm-up).
  const collective::CollectiveResult& last = r.results.back();
  const int unfinished = static_cast<int>(std::count_if(
      last.gpu_done_ps.begin(), last.gpu_done_ps.end(), [](auto d) { return d < 0; }));
  std::int64_t t0 = 0;
  if (s.iterate && s.warmup > 0) {
    t0 = -1;
    for (std::int64_t x : r.started_ps[static_cast<std::size_t>(s.warmup)]) {
      if (x >= 0 && (t0 < 0 || x < t0)) t0 = x;
    }
    t0 = std::max<std::int64_t>(t0, 0);
  }
  t.wall += r.rdma.stats.wall_s;
  t.events += r.rdma.stats.events;
  t.engine.add(nic::EngineTally::of(r.rdma));
  t.completed = t.completed && r.rdma.stats.completed;
  // The engine ran dry but a GPU never finished: packets were lost where nothing resends them
  // (SHARP's in-network packets) or a QP failed.
  t.stalled = t.stalled || (r.rdma.stats.completed && !last.complete());
  const double time_ps =
      iteration_time_ps(last.gpu_done_ps, t0, s.timed, given("--average") ? flags_.average : -1);
  row.time_us = time_ps * 1e-6;
  row.algbw = time_ps > 0 ? static_cast<double>(row.bytes) / (time_ps * 1e-12) / 1e9 : 0.0;
  row.unfinished = r.rdma.stats.completed ? unfinished : 0;
  row.choice = r.choice.algorithm + "/" + r.choice.protocol;
  if (s.cp.algorithm == "auto" || s.cp.protocol == "auto") {
    char line[160];
    std::snprintf(line, sizeof line, "%12lld B  %-16s (predicted %.2f us)",
                  static_cast<long long>(row.bytes), row.choice.c_str(),
                  r.choice.predicted_s * 1e6);
    t.tuner.emplace_back(line);
  }
  extra = {{"network_bytes", last.network_bytes},
           {"nvlink_bytes", last.nvlink_bytes},
           {"drops", r.rdma.summary.drops()},
           {"complete", last.complete()},
           {"algorithm", r.choice.algorithm},
           {"protocol", r.choice.protocol},
           {"pause_frames", r.rdma.summary.pause_frames},
           {"ecn_marks", r.rdma.summary.ecn_marks},
           {"max_queue_bytes", r.rdma.summary.max_queue},
           {"uplink_max_over_mean", r.rdma.summary.uplink_max_over_mean}};
  if (s.iterate) {
    // Each iteration's span (ps): from its first server's start to its last GPU's completion.
    nlohmann::json spans = nlohmann::json::array();
    for (std::size_t k = 0; k < r.results.size(); ++k) {
      std::int64_t first = -1;
      for (std::int64_t x : r.started_ps[k]) {
        if (x >= 0 && (first < 0 || x < first)) first = x;
      }
      spans.push_back(first >= 0 ? r.results[k].time_ps - first : -1);
    }
    extra["simulated_iterations"] = r.results.size();
    extra["timed_start_ps"] = t0;
    extra["end_ps"] = last.time_ps;
    extra["iteration_ps"] = std::move(spans);
  }
  return r.rdma.stats.completed;
}

namespace {

// Analytical fidelity: every size's alpha-beta bound at once (kernels::alpha_beta), in seconds.
std::map<std::int64_t, double> analytical_times(const BenchNcclCommand::Setup& s) {
  std::vector<std::int64_t> sizes;
  for (const NcclSweep& w : s.sweeps) sizes.insert(sizes.end(), w.sizes.begin(), w.sizes.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const fabric::Routing routing(s.topo);
  std::vector<kernels::AlphaBeta> in;
  for (std::int64_t b : sizes)
    in.push_back(collective::analytical_bound(s.topo, routing, s.comm, s.kind, b, s.cp, s.fp));
  std::vector<double> out(in.size());
  kernels::alpha_beta(in, out);
  std::map<std::int64_t, double> bounds;
  for (std::size_t i = 0; i < sizes.size(); ++i) bounds.emplace(sizes[i], out[i]);
  return bounds;
}

}  // namespace

// One size of a sweep: simulated (or its analytical bound) unless an earlier sweep ran the same
// size; `rows` keeps every size's row and JSON by its bytes.
Result<bool> BenchNcclCommand::run_size(const Setup& s, std::int64_t bytes, Totals& t,
                                        SizeCache& rows,
                                        const std::map<std::int64_t, double>& bounds,
                                        pdes::Sync& sync, const pdes::EngineOptions& opts) const {
  if (rows.count(bytes) > 0) return true;
  Row row;
  row.bytes = bytes;
  nlohmann::json extra = {{"complete", true}};
  bool running = true;
  if (auto b = bounds.find(bytes); b != bounds.end()) {
    row.time_us = b->second * 1e6;
    row.algbw = static_cast<double>(bytes) / b->second / 1e9;
    t.digest = hash_combine(t.digest, static_cast<std::uint64_t>(std::llround(b->second * 1e12)));
  } else {
    auto ran = simulate_size(s, row, t, extra, sync, opts);
    if (!ran) return ran.error();
    running = *ran;
  }
  row.busbw = row.algbw * collective::busbw_factor(s.kind, s.gpus);
  rows.emplace(bytes, std::make_pair(row, std::move(extra)));
  return running;
}

int BenchNcclCommand::execute(int rank, int ranks) {
  auto prepared = prepare(ranks);
  if (!prepared) return user_error(rank, prepared.error().message);
  Setup setup = std::move(prepared).value();
  add_notes(setup, ranks);
  const Setup& s = setup;
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", sim_.json_path);
  if (auto ok = check_outputs_once(outputs, {sim_.topology}, rank); !ok)
    return user_error(rank, ok.error().message);
  if (auto ok = check_fabric_memory(s.topo, ranks); !ok)
    return user_error(rank, ok.error().message);
  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  std::size_t sizes = 0;
  for (const NcclSweep& w : s.sweeps) sizes += w.sizes.size();
  pdes::EngineOptions opts =
      bench_engine_options(sim_.threads, s.end, !sim_.quiet && sizes == 1, rank);
  opts.partitioner = sim_.partition;
  const std::map<std::int64_t, double> bounds = sim_.fidelity.fidelity == "analytical"
                                                    ? analytical_times(s)
                                                    : std::map<std::int64_t, double>{};
  if (rank == 0) print_preamble(s);
  Totals t;
  SizeCache rows;
  const int root = rooted(s.kind) ? flags_.root : -1;
  bool running = true;
  for (const NcclSweep& w : s.sweeps) {
    for (std::size_t i = 0; i < w.sizes.size() && running; ++i) {
      auto ran = run_size(s, w.sizes[i], t, rows, bounds, sync, opts);
      if (!ran) return user_error(rank, ran.error().message);
      running = *ran;
      auto& [r, extra] = rows.at(w.sizes[i]);
      Row row = r;
      const std::int64_t count = s.count(row.bytes, w.elem);
      row.wrong = std::int64_t{row.unfinished} * count;
      t.busbw_sum += row.busbw;
      ++t.rows;
      t.wrong_rows += flags_.check > 0 && row.wrong > 0 ? 1 : 0;
      if (rank != 0) continue;
      print_row(row, w, count, root);
      nlohmann::json j = {{"bytes", row.bytes},     {"count", count},
                          {"type", w.type},         {"redop", w.op},
                          {"time_us", row.time_us}, {"algbw_gbs", row.algbw},
                          {"busbw_gbs", row.busbw}, {"wrong", row.wrong}};
      j.update(extra);
      t.rows_json.push_back(j);
    }
  }
  finish_progress();
  if (rank != 0) return t.completed ? kExitOk : interrupted_exit_code();
  print_footer(t, ranks);
  if (!sim_.json_path.empty()) {
    if (const int rc = write_json_file(rank, ranks, s, t); rc != kExitOk) return rc;
  }
  if (!t.completed) return interrupted_exit_code();
  return t.stalled || t.wrong_rows > 0 ? kExitFailure : kExitOk;
}

}  // namespace stepsim::cli
