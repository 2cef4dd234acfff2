#include "src/cli/bench_nccl.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

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

// nccl-tests' data types (-d) and their element sizes.
struct DataType {
  const char* name;
  int bytes;
};
constexpr std::array<DataType, 10> kDataTypes{{{"int8", 1},
                                               {"uint8", 1},
                                               {"int32", 4},
                                               {"uint32", 4},
                                               {"int64", 8},
                                               {"uint64", 8},
                                               {"half", 2},
                                               {"float", 4},
                                               {"double", 8},
                                               {"bfloat16", 2}}};
constexpr std::array<const char*, 6> kOps{{"sum", "prod", "max", "min", "avg", "mulsum"}};
// Iterations simulated per size at most (-w + -n x -m): each holds its own collective's state.
constexpr int kMaxIterations = 10000;

using collective::Kind;

bool reduces(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduceScatter || k == Kind::kReduce;
}
bool rooted(Kind k) {
  return k == Kind::kBroadcast || k == Kind::kReduce;
}
// The collectives whose buffers are split across the ranks: their sizes are a multiple of the
// ranks and nccl-tests' count column is the per-rank count.
bool split(Kind k) {
  return k == Kind::kAllGather || k == Kind::kReduceScatter || k == Kind::kAllToAll;
}

}  // namespace

// One size's outcome, printed as nccl-tests' row.
struct BenchNcclCommand::Row {
  std::int64_t bytes = 0;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  std::int64_t wrong = 0;  // elements that never arrived (GPUs that did not finish x count)
};

struct BenchNcclCommand::Setup {
  Kind kind = Kind::kAllReduce;
  collective::CollectiveParams cp;
  nic::NicParams nic;
  fabric::FabricParams fp;
  topology::Topology topo;
  collective::Communicator comm;
  int gpus = 16;
  int elem = 4;  // bytes per element of -d
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::int64_t step = 0;
  std::vector<std::int64_t> sizes;
  SimTime end;
  bool iterate = false;  // -n, -w or -m given: warm-up and timed iterations in one run
  int warmup = 0;        // iterations simulated before the timed ones (-w, when iterating)
  int timed = 1;         // timed iterations (-n x -m; 1 without -n/-w/-m)
  [[nodiscard]] std::int64_t count(std::int64_t bytes) const {
    return split(kind) ? bytes / elem / gpus : bytes / elem;
  }
};

struct BenchNcclCommand::Totals {
  std::uint64_t digest = 0;
  double busbw_sum = 0;
  std::size_t rows = 0;
  int wrong_rows = 0;
  bool completed = true;
  bool stalled = false;
  double wall = 0;
  std::uint64_t events = 0;
  nic::EngineTally engine;
  std::vector<std::string> tuner;  // "size algorithm/protocol" with --algo/--proto auto
  nlohmann::json rows_json = nlohmann::json::array();
};

BenchNcclCommand::BenchNcclCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "nccl",
      "nccl-tests on the simulated GPUs, NVLink, NICs and fabric: one collective per size, "
      "printed as nccl-tests prints it (out-of-place and in-place columns; every other line "
      "starts with '#'). Takes nccl-tests' flags.");
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
                   "nccl-tests threads per process: with -g, --gpus defaults to -t x -g")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("-g,--ngpus", f.gpus_per_thread, "nccl-tests GPUs per thread (see -t)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd_->add_option("-n,--iters", f.iters,
                   "Timed iterations per size. Given (or -w, -m), each size simulates -w warm-up "
                   "then -n x -m timed iterations back to back in one run, and time is the timed "
                   "ones' average; without them one iteration is simulated")
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
  cmd_->add_option("-o,--op", f.op, "Reduction: sum, prod, max, min, avg or mulsum (redop column)")
      ->capture_default_str();
  cmd_->add_option("-d,--datatype", f.datatype,
                   "Data type: int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                   "bfloat16 (element size: sizes are whole elements, count column)")
      ->capture_default_str();
  cmd_->add_option("-r,--root", f.root, "Root rank (broadcast, reduce)")->capture_default_str();
  cmd_->add_option("-J,--json,--output_file", sim_.json_path,
                   "Also write the results as JSON to this file");
}

void BenchNcclCommand::add_sim_options() {
  NcclSimOptions& o = sim_;
  cmd_->add_option("--topology", o.topology,
                   "Topology file (default: topologies/rail-128gpu-800g.yaml of the data files)");
  cmd_->add_option("--gpus", o.gpus,
                   "GPUs in the communicator, the first servers' (default: -t x -g when given, "
                   "else 16)");
  cmd_->add_option("--algo", o.algo,
                   "Algorithm: " + list_words(algorithm_choices()) +
                       " (auto: NCCL's tuner among the algorithms that run the collective; "
                       "AllToAll is pairwise)")
      ->capture_default_str();
  cmd_->add_option("--gpu", o.gpu,
                   "GPU: " + list_words(gpu_choices()) + " (NVLink rate and efficiency)")
      ->capture_default_str();
  cmd_->add_option("--proto", o.proto,
                   "Protocol: " + list_words(protocol_choices()) + " (auto: the tuner)")
      ->capture_default_str();
  cmd_->add_option("--channels", o.channels, "Channels (rings)")->capture_default_str();
  cmd_->add_option("--cc", o.cc, "Congestion control of the NICs: " + list_words(cc_choices()))
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
  const std::pair<const char*, const std::string*> shorthands[] = {
      {"--gpu", &sim_.gpu}, {"--algo", &sim_.algo}, {"--proto", &sim_.proto}};
  const char* keys[] = {"gpu.model", "coll.algorithm", "coll.protocol"};
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto ok = coll_table.set(keys[i], *shorthands[i].second); !ok) {
      return Error{std::string(shorthands[i].first) + ": " + ok.error().message};
    }
  }
  if (auto ok = coll_table.set("coll.channels", std::to_string(sim_.channels)); !ok) {
    return Error{"--channels: " + ok.error().message};
  }
  if (cmd_->count("--cc") > 0 || sim_.nic_config.empty()) {
    if (auto ok = nic_table.set("cc.algorithm", sim_.cc); !ok) {
      return Error{"--cc: " + ok.error().message};
    }
  }
  s.fp.lb.policy = sim_.lb;
  for (const std::string& kv : sim_.sets) {
    const bool coll = kv.rfind("coll.", 0) == 0 || kv.rfind("gpu.", 0) == 0;
    const bool fabric = kv.rfind("fabric.", 0) == 0;
    auto ok = coll ? coll_table.apply(kv) : fabric ? fabric_table.apply(kv) : nic_table.apply(kv);
    if (!ok) return Error{"--set " + ok.error().message};
  }
  if (auto ok = s.cp.validate(); !ok) return ok.error();
  if (auto ok = s.nic.validate(); !ok) return ok.error();
  if (auto ok = sim_.fidelity.apply(s.fp); !ok) return ok.error();
  if (auto ok = s.fp.validate(); !ok) return ok.error();
  return true;
}

// nccl-tests' sizes: from -b to -e times -f, or plus -i without -f; each rounded down to whole
// elements (and, for the split collectives, to a multiple of the ranks).
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
  const std::int64_t unit = split(s.kind) ? std::int64_t{s.elem} * s.gpus : s.elem;
  for (double x = static_cast<double>(s.lo); x <= static_cast<double>(s.hi) * 1.0000001;) {
    const std::int64_t b = static_cast<std::int64_t>(x) / unit * unit;
    if (s.sizes.empty() || b != s.sizes.back()) s.sizes.push_back(b);
    if (linear) {
      if (s.step < 1) break;
      x += static_cast<double>(s.step);
    } else {
      if (x <= 0) break;
      x *= flags_.step_factor;
    }
  }
  return true;
}

Result<BenchNcclCommand::Setup> BenchNcclCommand::prepare() const {
  Setup s;
  auto kind = collective::parse_kind(kind_);
  if (!kind) return kind.error();
  s.kind = *kind;
  const auto type = std::find_if(kDataTypes.begin(), kDataTypes.end(),
                                 [&](const DataType& t) { return flags_.datatype == t.name; });
  if (type == kDataTypes.end()) {
    return Error{"--datatype: '" + flags_.datatype +
                 "' is not a type (allowed: int8, uint8, int32, uint32, int64, uint64, half, "
                 "float, double, bfloat16)"};
  }
  s.elem = type->bytes;
  if (std::find_if(kOps.begin(), kOps.end(), [&](const char* o) { return flags_.op == o; }) ==
      kOps.end()) {
    return Error{"--op: '" + flags_.op +
                 "' is not an op (allowed: sum, prod, max, min, avg, mulsum)"};
  }
  const bool nccl_ranks = cmd_->count("--ngpus") > 0 || cmd_->count("--nthreads") > 0;
  s.gpus = sim_.gpus > 0 ? sim_.gpus : nccl_ranks ? flags_.threads * flags_.gpus_per_thread : 16;
  if (cmd_->count("--gpus") > 0 && sim_.gpus < 1) return Error{"--gpus: must be >= 1"};
  auto end = parse_time(sim_.end);
  if (!end) return Error{"--end: " + end.error().message};
  s.end = *end;
  if (auto ok = load_parameters(s); !ok) return ok.error();
  const std::string path =
      sim_.topology.empty() ? data_dir() + "/topologies/rail-128gpu-800g.yaml" : sim_.topology;
  auto topo = topology::load_topology(path);
  if (!topo) return topo.error();
  s.topo = std::move(topo).value();
  auto comm = collective::make_communicator(s.topo, s.gpus);
  if (!comm) return comm.error();
  s.comm = std::move(comm).value();
  if (flags_.root < 0 || flags_.root >= s.gpus) {
    return Error{"--root " + std::to_string(flags_.root) + " is not a rank (0.." +
                 std::to_string(s.gpus - 1) + ")"};
  }
  s.iterate =
      cmd_->count("--iters") + cmd_->count("--warmup_iters") + cmd_->count("--agg_iters") > 0;
  if (s.iterate) {
    s.warmup = flags_.warmup_iters;
    s.timed = flags_.iters * flags_.agg_iters;
    if (std::int64_t{flags_.iters} * flags_.agg_iters + flags_.warmup_iters > kMaxIterations) {
      return Error{
          "--iters/--warmup_iters/--agg_iters: " +
          std::to_string(std::int64_t{flags_.iters} * flags_.agg_iters + flags_.warmup_iters) +
          " iterations per size (allowed: -w + -n x -m up to " + std::to_string(kMaxIterations) +
          ")"};
    }
  }
  if (auto p = pdes::make_partitioner(sim_.partition); !p) {
    return Error{"--partition: " + p.error().message};
  }
  if (auto ok = sweep(s); !ok) return ok.error();
  return s;
}

namespace {

// "#  Rank  r Group  0 Pid  0 on serverN device  d [0x00] <GPU> (simulated)" per GPU.
void print_devices(const collective::Communicator& comm, const std::string& gpu) {
  std::printf("# Using devices\n");
  for (int r = 0; r < comm.size(); ++r) {
    const collective::Gpu& g = comm.gpus[static_cast<std::size_t>(r)];
    const std::string host = "server" + std::to_string(g.server);
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2u [0x%02x] %s (simulated)\n", r, 0,
                0, host.c_str(), g.local, 0, gpu.c_str());
  }
}

// nccl-tests' three header lines of the table.
void print_table_header() {
  std::printf(
      "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
      "in-place          \n",
      "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "");
}

}  // namespace

void BenchNcclCommand::print_preamble(const Setup& s) const {
  const bool linear = flags_.step_factor <= 1;
  char step[64];
  if (linear) {
    std::snprintf(step, sizeof step, "%lld(bytes)", static_cast<long long>(s.step));
  } else {
    std::snprintf(step, sizeof step, "%g(factor)", flags_.step_factor);
  }
  const int threads = s.gpus % flags_.threads == 0 ? flags_.threads : 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %s warmup iters: %d iters: "
      "%d agg iters: %d validation: %d graph: 0\n",
      threads, s.gpus / threads, static_cast<long long>(s.lo), static_cast<long long>(s.hi), step,
      flags_.warmup_iters, flags_.iters, flags_.agg_iters, flags_.check > 0 ? 1 : 0);
  if (flags_.blocking != 0) {
    std::printf("# Blocking Enabled: wait for completion and barrier after each collective\n");
  }
  const bool pairwise = s.kind == Kind::kAllToAll || s.kind == Kind::kSendRecv;
  std::printf(
      "#\n# stepsim bench nccl %s: %d GPUs %s (%u per server) on %s, algo %s, proto %s, "
      "channels %d, cc %s, lb %s, fidelity %s\n#\n",
      kind_.c_str(), s.gpus, s.cp.gpu.c_str(), s.comm.gpus_per_server, s.topo.name.c_str(),
      pairwise ? "pairwise" : s.cp.algorithm.c_str(), s.cp.protocol.c_str(), s.cp.channels,
      s.nic.cc.algorithm.c_str(), sim_.lb.c_str(), sim_.fidelity.describe(s.fp).c_str());
  if (s.iterate && sim_.fidelity.fidelity == "analytical") {
    std::printf("# iterations: analytical fidelity: every iteration is the same bound\n#\n");
  } else if (s.iterate) {
    static constexpr std::array<const char*, 4> kAverage{"rank 0's", "average", "minimum",
                                                         "maximum"};
    std::printf(
        "# iterations: %d warm-up + %d x %d timed per size, back to back in one run; time: the "
        "timed ones' per iteration, %s over the GPUs\n#\n",
        s.warmup, flags_.iters, flags_.agg_iters,
        cmd_->count("--average") > 0 ? kAverage[static_cast<std::size_t>(flags_.average)]
                                     : "the last GPU's");
  }
  print_devices(s.comm, s.cp.gpu);
  print_table_header();
}

namespace {

// One row: the parameters, then out-of-place and in-place (the simulation moves the same data
// either way, so both columns hold the same run).
void print_row(const BenchNcclCommand::Row& r, std::int64_t count, const char* type, const char* op,
               int root, bool check) {
  std::printf("%12lld  %12lld  %8s  %6s  %6d", static_cast<long long>(r.bytes),
              static_cast<long long>(count), type, op, root);
  for (int placement = 0; placement < 2; ++placement) {
    std::printf("  %s  %s  %s", fit_number(r.time_us, 7).c_str(), fit_number(r.algbw, 6).c_str(),
                fit_number(r.busbw, 6).c_str());
    if (check) {
      std::printf("  %6lld", static_cast<long long>(r.wrong));
    } else {
      std::printf("    N/A");
    }
  }
  std::printf("\n");
}

}  // namespace

void BenchNcclCommand::print_footer(const Totals& t, int ranks) const {
  std::printf("# Out of bounds values : %d %s\n", t.wrong_rows, t.wrong_rows > 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n#\n",
              t.rows > 0 ? t.busbw_sum / static_cast<double>(t.rows) : 0.0);
  if (!t.completed) std::printf("# status: INTERRUPTED\n");
  if (t.stalled) {
    std::printf(
        "# status: INCOMPLETE (a collective never finished on every GPU: see #wrong and the drop "
        "counters of --json)\n");
  }
  for (const std::string& line : t.tuner) std::printf("# tuner: %s\n", line.c_str());
  print_engine_line("# engine: ", ranks, sim_.threads, t.events, t.wall);
  if (t.events > 0) print_partition("partition " + sim_.partition, t.engine);
  std::printf("# digest           %s\n", digest_hex(t.digest).c_str());
}

int BenchNcclCommand::write_json_file(int rank, int ranks, const Setup& s, const Totals& t) const {
  nlohmann::json j;
  j["benchmark"] = "nccl";
  j["collective"] = kind_;
  j["gpus"] = s.gpus;
  j["topology"] = s.topo.name;
  j["protocol"] = s.cp.protocol;
  j["channels"] = s.cp.channels;
  j["datatype"] = flags_.datatype;
  j["op"] = flags_.op;
  j["iters"] = flags_.iters;
  j["warmup_iters"] = flags_.warmup_iters;
  j["fidelity"] = sim_.fidelity.fidelity;
  j["cell_bytes"] = s.fp.cell.count();
  j["rows"] = t.rows_json;
  j["wall_s"] = t.wall;
  j["events"] = t.events;
  j["engine"] = engine_json(sim_.partition, ranks, t.engine);
  j["digest"] = digest_hex(t.digest);
  return write_json(rank, sim_.json_path, j);
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
  const double time_ps = iteration_time_ps(last.gpu_done_ps, t0, s.timed,
                                           cmd_->count("--average") > 0 ? flags_.average : -1);
  row.time_us = time_ps * 1e-6;
  row.algbw = time_ps > 0 ? static_cast<double>(row.bytes) / (time_ps * 1e-12) / 1e9 : 0.0;
  row.wrong = r.rdma.stats.completed ? unfinished * s.count(row.bytes) : 0;
  if (s.cp.algorithm == "auto" || s.cp.protocol == "auto") {
    t.tuner.push_back(std::to_string(row.bytes) + " " + r.choice.algorithm + "/" +
                      r.choice.protocol);
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
std::vector<double> analytical_times(const topology::Topology& topo,
                                     const collective::Communicator& comm, Kind kind,
                                     const std::vector<std::int64_t>& sizes,
                                     const collective::CollectiveParams& cp,
                                     const fabric::FabricParams& fp) {
  const fabric::Routing routing(topo);
  std::vector<kernels::AlphaBeta> in;
  for (std::int64_t b : sizes)
    in.push_back(collective::analytical_bound(topo, routing, comm, kind, b, cp, fp));
  std::vector<double> out(in.size());
  kernels::alpha_beta(in, out);
  return out;
}

}  // namespace

int BenchNcclCommand::execute(int rank, int ranks) {
  auto prepared = prepare();
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
  pdes::EngineOptions opts =
      bench_engine_options(sim_.threads, s.end, !sim_.quiet && s.sizes.size() == 1, rank);
  opts.partitioner = sim_.partition;
  const std::vector<double> bound_s =
      sim_.fidelity.fidelity == "analytical"
          ? analytical_times(s.topo, s.comm, s.kind, s.sizes, s.cp, s.fp)
          : std::vector<double>{};
  if (rank == 0) print_preamble(s);
  Totals t;
  const char* op = reduces(s.kind) ? flags_.op.c_str() : "none";
  const int root = rooted(s.kind) ? flags_.root : -1;
  bool running = true;
  for (std::size_t i = 0; i < s.sizes.size() && running; ++i) {
    Row row;
    row.bytes = s.sizes[i];
    nlohmann::json j = {{"bytes", row.bytes}, {"count", s.count(row.bytes)}};
    nlohmann::json extra = {{"complete", true}};
    if (!bound_s.empty()) {
      row.time_us = bound_s[i] * 1e6;
      row.algbw = static_cast<double>(row.bytes) / bound_s[i] / 1e9;
      t.digest =
          hash_combine(t.digest, static_cast<std::uint64_t>(std::llround(bound_s[i] * 1e12)));
    } else {
      auto ran = simulate_size(s, row, t, extra, sync, opts);
      if (!ran) return user_error(rank, ran.error().message);
      running = *ran;
    }
    row.busbw = row.algbw * collective::busbw_factor(s.kind, s.gpus);
    t.busbw_sum += row.busbw;
    ++t.rows;
    t.wrong_rows += flags_.check > 0 && row.wrong > 0 ? 1 : 0;
    if (rank != 0) continue;
    print_row(row, s.count(row.bytes), flags_.datatype.c_str(), op, root, flags_.check > 0);
    j.update({{"time_us", row.time_us},
              {"algbw_gbs", row.algbw},
              {"busbw_gbs", row.busbw},
              {"wrong", row.wrong}});
    j.update(extra);
    t.rows_json.push_back(j);
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
