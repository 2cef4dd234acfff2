// `bench nccl`'s output: nccl-tests' header, rows and closing lines (every line but the rows
// behind '#'), the notes of what was simulated, and the JSON file.
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "src/cli/bench_nccl.hpp"
#include "src/cli/bench_nccl_types.hpp"
#include "src/cli/bench_output.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/progress.hpp"

namespace stepsim::cli {
namespace {

using collective::Kind;

// "#  Rank  r Group  0 Pid  p on serverN device  d [0x00] <GPU> (simulated)" per GPU; p is the
// nccl-tests process (--np) the rank belongs to.
void print_devices(const collective::Communicator& comm, const std::string& gpu, int procs) {
  std::printf("# Using devices\n");
  const int per_proc = std::max(1, comm.size() / std::max(1, procs));
  for (int r = 0; r < comm.size(); ++r) {
    const collective::Gpu& g = comm.gpus[static_cast<std::size_t>(r)];
    const std::string host = "server" + std::to_string(g.server);
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2u [0x%02x] %s (simulated)\n", r, 0,
                procs > 1 ? r / per_proc : 0, host.c_str(), g.local, 0, gpu.c_str());
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

// The notes of nccl-tests' flags the simulation does not model, and of an MPI world that is not
// nccl-tests' processes.
void BenchNcclCommand::add_notes(Setup& s, int ranks) const {
  auto note = [&](const char* flag, int value, const char* what) {
    s.notes.push_back(std::string(flag) + " " + std::to_string(value) + ": " + what);
  };
  const NcclTestsFlags& f = flags_;
  if (given("--parallel_init"))
    note("-p", f.parallel_init, "NCCL's initialisation is not simulated");
  if (given("--cudagraph")) {
    note("-G", f.cudagraph,
         "CUDA graphs are not modelled: every collective keeps its launch latency");
  }
  if (given("--report_cputime")) {
    note("-C", f.report_cputime, "no host CPU is simulated: time is the GPUs' time");
  }
  if (given("--timeout")) {
    note("-T", f.timeout, "no wall-clock timeout: --end bounds each size's simulated time");
  }
  if (given("--run_cycles")) {
    note("-N", f.run_cycles,
         "every cycle is the same deterministic simulation: one cycle is run and printed");
  }
  if (given("--local_register")) {
    note("-R", f.local_register, "buffer registration is not modelled (the same transfers)");
  }
  if (given("--stream_null")) note("-y", f.stream_null, "CUDA streams are not modelled");
  if (given("--algo") && (s.env.algo || !s.env.algo_excluded.empty())) {
    s.notes.push_back("--algo overrides NCCL_ALGO");
  }
  if (given("--proto") && (s.env.proto || !s.env.proto_excluded.empty())) {
    s.notes.push_back("--proto overrides NCCL_PROTO");
  }
  if (given("--channels") && (s.env.channels || s.env.min_channels || s.env.max_channels)) {
    s.notes.push_back("--channels overrides NCCL_NCHANNELS/NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS");
  }
  if (ranks > 1 && !given("--np") && !given("--gpus")) {
    s.notes.push_back("the " + std::to_string(ranks) +
                      " MPI ranks run the simulation, they are not nccl-tests processes: " +
                      std::to_string(s.gpus) + " GPUs (mpirun -np N all_reduce_perf is --np N)");
  }
  if (s.sweeps.size() > 1) {
    s.notes.push_back(std::to_string(s.sweeps.size()) +
                      " sweeps (-d, -o): a size already simulated is not simulated again, the "
                      "type and op change the sizes, not the traffic");
  }
}

void BenchNcclCommand::print_preamble(const Setup& s) const {
  const bool linear = flags_.step_factor <= 1;
  char step[64];
  if (linear) {
    std::snprintf(step, sizeof step, "%lld(bytes)", static_cast<long long>(s.step));
  } else {
    std::snprintf(step, sizeof step, "%g(factor)", flags_.step_factor);
  }
  // nccl-tests' line: threads and GPUs per thread of one process, and the iterations simulated.
  const int per_proc = s.gpus % s.procs == 0 ? s.gpus / s.procs : s.gpus;
  const int threads = per_proc % flags_.threads == 0 ? flags_.threads : 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %s warmup iters: %d iters: "
      "%d agg iters: %d validation: %d graph: %d\n",
      threads, per_proc / threads, static_cast<long long>(s.lo), static_cast<long long>(s.hi), step,
      s.iterate ? s.warmup : 0, s.iterate ? flags_.iters : 1, s.iterate ? flags_.agg_iters : 1,
      flags_.check > 0 ? 1 : 0, flags_.cudagraph);
  if (flags_.blocking != 0) {
    std::printf("# Blocking Enabled: wait for completion and barrier after each collective\n");
  }
  std::printf("#\n");
  for (const std::string& line : s.env.info) std::printf("# NCCL INFO %s\n", line.c_str());
  const bool pairwise = s.kind == Kind::kAllToAll || s.kind == Kind::kSendRecv;
  std::printf(
      "# stepsim bench nccl %s: %d GPUs %s (%u per server, %d nccl-tests processes) on %s, algo "
      "%s, proto %s, channels %d, cc %s, lb %s, fidelity %s\n",
      kind_.c_str(), s.gpus, s.cp.gpu.c_str(), s.comm.gpus_per_server, s.procs, s.topo.name.c_str(),
      pairwise ? "pairwise" : s.cp.algorithm.c_str(), s.cp.protocol.c_str(), s.cp.channels,
      s.nic.cc.algorithm.c_str(), sim_.lb.c_str(), sim_.fidelity.describe(s.fp).c_str());
  for (const std::string& line : s.notes) std::printf("# note: %s\n", line.c_str());
  if (s.iterate && sim_.fidelity.fidelity == "analytical") {
    std::printf("# iterations: analytical fidelity: every iteration is the same bound\n");
  } else if (s.iterate) {
    static constexpr std::array<const char*, 4> kAverage{"rank 0's", "average", "minimum",
                                                         "maximum"};
    std::printf(
        "# iterations: %d warm-up + %d x %d timed per size, back to back in one run; time: the "
        "timed ones' per iteration, %s over the GPUs\n",
        s.warmup, flags_.iters, flags_.agg_iters,
        given("--average") ? kAverage[static_cast<std::size_t>(flags_.average)] : "the last GPU's");
  } else {
    std::printf(
        "# iterations: 1 per size on an idle fabric (nccl-tests' -w 5 -n 20 are simulated when "
        "-n, -w or -m is given)\n");
  }
  std::printf("#\n");
  print_devices(s.comm, s.cp.gpu, s.procs);
  print_table_header();
}

// One row: the parameters, then out-of-place and in-place (the simulation moves the same data
// either way, so both columns hold the same run).
void BenchNcclCommand::print_row(const Row& r, const NcclSweep& w, std::int64_t count,
                                 int root) const {
  std::printf("%12lld  %12lld  %8s  %6s  %6d", static_cast<long long>(r.bytes),
              static_cast<long long>(count), w.type.c_str(), w.op.c_str(), root);
  for (int placement = 0; placement < 2; ++placement) {
    std::printf("  %s  %s  %s", fit_number(r.time_us, 7).c_str(), fit_number(r.algbw, 6).c_str(),
                fit_number(r.busbw, 6).c_str());
    if (flags_.check > 0) {
      std::printf("  %6lld", static_cast<long long>(r.wrong));
    } else {
      std::printf("    N/A");
    }
  }
  std::printf("\n");
}

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
  j["processes"] = s.procs;
  j["topology"] = s.topo.name;
  j["algorithm"] = s.cp.algorithm;
  j["protocol"] = s.cp.protocol;
  j["channels"] = s.cp.channels;
  j["datatype"] = flags_.datatype;
  j["op"] = flags_.op;
  // What was simulated per size (without -n/-w/-m: one iteration, no warm-up).
  j["iters"] = s.iterate ? flags_.iters : 1;
  j["warmup_iters"] = s.iterate ? s.warmup : 0;
  j["agg_iters"] = s.iterate ? flags_.agg_iters : 1;
  j["simulated_iterations_per_size"] = s.iterate ? s.warmup + s.timed : 1;
  nlohmann::json env = nlohmann::json::array();
  for (const std::string& line : s.env.info) env.push_back(line);
  j["environment"] = std::move(env);
  j["notes"] = s.notes;
  j["fidelity"] = sim_.fidelity.fidelity;
  j["cell_bytes"] = s.fp.cell.count();
  j["rows"] = t.rows_json;
  j["wall_s"] = t.wall;
  j["events"] = t.events;
  j["engine"] = engine_json(sim_.partition, ranks, t.engine);
  j["digest"] = digest_hex(t.digest);
  return write_json(rank, sim_.json_path, j);
}

}  // namespace stepsim::cli
