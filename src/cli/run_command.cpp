#include "src/cli/run_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "src/cli/work_curve.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/output/chrome_trace.hpp"
#include "stepsim/output/samples_h5.hpp"
#include "stepsim/output/step_h5.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/version.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::cli {

RunCommand::RunCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "run", "One training step of a scenario (workloads/*.yaml): step time, MFU, breakdown");
  cmd_->add_option("scenario", opt_.scenario, "Scenario file (workloads/*.yaml)")->required();
  cmd_->add_option(
      "--set", opt_.sets,
      "Override a scenario key: key=value, or one job's: jobs.NAME.key=value (repeatable)");
  cmd_->add_option("--fidelity", opt_.fidelity,
                   "packet (every collective at packet level), cell (the same fabric in cells of "
                   "fabric.cell bytes, 64 KiB by default), ideal (NCCL's cost model) or "
                   "analytical (alpha-beta lower bound)");
  cmd_->add_option("--threads", opt_.threads, "OpenMP threads per rank")->capture_default_str();
  cmd_->add_option("--partition", opt_.partition,
                   "Partitioner of LPs onto ranks: auto (cyclic for the whole step, metis "
                   "otherwise), metis (weighted by each collective's traffic), cyclic (LP v on "
                   "rank v mod ranks: what is busy at the same time is spread) or block")
      ->capture_default_str();
  cmd_->add_option("--json", opt_.json_path, "Write the summary as JSON to this file");
  cmd_->add_option("-o,--output", opt_.output,
                   "HDF5 file of the step (docs/hdf5-schema.md); default: SCENARIO stem + .h5");
  cmd_->add_flag("--no-output", opt_.no_output, "Do not write the HDF5 file");
  cmd_->add_option("--trace", opt_.trace,
                   "Write the op timeline as a Chrome/Perfetto trace (JSON) to this file");
  cmd_->add_option("--progress", opt_.progress_s,
                   "Seconds between progress lines on stderr (0.5 on a terminal, 10 in a log by "
                   "default; 0: one per report)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd_->add_flag("--quiet", opt_.quiet, "No progress output");
  cmd_->add_option("--fault", opt_.faults,
                   "step.mode whole: a link fault during the step (repeatable): down:LINK@TIME, "
                   "up:LINK@TIME, lanes:LINK@TIME=N, flap:LINK@START,PERIOD,DOWN,COUNT");
  cmd_->add_option("--pcie-fault", opt_.pcie_faults,
                   "step.mode whole: GPU's NIC retrains its PCIe link lower (repeatable): "
                   "GPU:GEN@TIME, e.g. 12:gen4@2ms");
  cmd_->add_option("--slow-gpu", opt_.slow_gpus,
                   "step.mode whole: a straggler (repeatable): GPU:FACTOR, its compute takes "
                   "FACTOR times as long, e.g. 5:1.3");
  cmd_->add_option("--background", opt_.background,
                   "step.mode whole: background traffic on the same fabric (repeatable): "
                   "PATTERN@RATE[,UNTIL], PATTERN permutation, incast, all_to_all or hotspot, "
                   "RATE per flow (e.g. 100G), UNTIL the simulated time it stops (default: the "
                   "ideal step time), e.g. permutation@200G");
}

namespace {

using workload::CommGroup;
using workload::OpKind;

// A whole step run with step.fold none that could fold `rails` rails: what to do about it (the
// summary's `hint` line and the progress line before the run).
std::string fold_hint(std::uint32_t rails) {
  return "--set step.fold=rails would run 1 of these " + std::to_string(rails) +
         " rails (the job is rail-symmetric: " + std::to_string(rails) +
         "x fewer events; docs/workload.md, Rail folding)";
}

// A loaded and validated run: the scenario (with --set and --fidelity applied) and its topology.
struct LoadedRun {
  std::vector<std::string> sets;  // --set, then fidelity=
  workload::Scenario scenario;
  topology::Topology topo;
};

// What the summary, the JSON and the HDF5 file report.
struct StepReport {
  const RunOptions& opt;
  const LoadedRun& run;
  const workload::StepResult& r;
  int ranks = 1;
  double wall_s = 0;
  bool samples_written = false;  ///< the file exists with /nodes, /ports, /samples (whole step)
};

const char* group_name(int g) {
  return workload::comm_group_name(static_cast<CommGroup>(g));
}

// The run's GPUs, model name(s) and tokens per step (several jobs: all of them).
std::int64_t run_gpus(const workload::Scenario& s) {
  std::int64_t n = s.jobs.empty() ? s.par.world() : 0;
  for (const workload::JobSpec& j : s.jobs) n += static_cast<std::int64_t>(j.gpus.size());
  return n;
}
std::string run_model(const workload::Scenario& s) {
  if (s.jobs.empty()) return s.model.name;
  std::string names;
  for (const workload::JobSpec& j : s.jobs) names += (names.empty() ? "" : "+") + j.model.name;
  return names;
}
double run_tokens(const workload::Scenario& s) {
  if (s.jobs.empty()) return static_cast<double>(s.par.global_batch) * s.model.seq_len;
  double t = 0;
  for (const workload::JobSpec& j : s.jobs) {
    t += static_cast<double>(j.par.global_batch) * j.model.seq_len;
  }
  return t;
}

// The GPUs --pcie-fault and --slow-gpu may name: 0..count-1 and, with several jobs, each in
// some job.
struct JobGpus {
  std::uint64_t count = 0;
  std::vector<bool> in_job;  // by GPU (several jobs), else empty
};

// GPU:REST with GPU one of `gpus`; returns GPU and REST. The error shows `form`.
Result<std::pair<std::uint32_t, std::string>> gpu_prefix(const std::string& text,
                                                         const JobGpus& gpus, const char* opt_name,
                                                         const char* form) {
  const auto colon = text.find(':');
  std::uint64_t g = 0;
  const bool num = colon != std::string::npos && colon > 0 && colon <= 9 &&
                   text.find_first_not_of("0123456789") == colon;
  if (num) g = std::stoull(text.substr(0, colon));
  if (!num || g >= gpus.count || (!gpus.in_job.empty() && !gpus.in_job[g])) {
    return Error{std::string(opt_name) + ": '" + text + "' is not " + form + " (GPU 0.." +
                 std::to_string(gpus.count - 1) + (gpus.in_job.empty() ? "" : ", in a job's gpus") +
                 ")"};
  }
  return std::make_pair(static_cast<std::uint32_t>(g), text.substr(colon + 1));
}

// --pcie-fault GPU:GEN@TIME: the link of that GPU's NIC drops to PCIe generation GEN.
Result<bool> add_pcie_fault(const std::string& f, const JobGpus& gpus,
                            const collective::Communicator& all, workload::Scenario& s) {
  auto g = gpu_prefix(f, gpus, "--pcie-fault", "GPU:GEN@TIME (e.g. 12:gen4@2ms)");
  if (!g) return g.error();
  const std::string& rest = g->second;
  const auto at = rest.find('@');
  const std::string gen = rest.substr(0, at);
  auto when = parse_time(at == std::string::npos ? "" : rest.substr(at + 1));
  if (at == std::string::npos || gen.size() != 4 || gen.rfind("gen", 0) != 0 || gen[3] < '3' ||
      gen[3] > '7' || !when) {
    return Error{"--pcie-fault: '" + f +
                 "' is not GPU:GEN@TIME (GEN gen3..gen7, e.g. "
                 "12:gen4@2ms)"};
  }
  s.nic.pcie_faults.push_back({all.gpus[g->first].nic, *when, gen[3] - '0'});
  return true;
}

// --slow-gpu GPU:FACTOR.
Result<bool> add_slow_gpu(const std::string& f, const JobGpus& gpus, workload::Scenario& s) {
  auto g = gpu_prefix(f, gpus, "--slow-gpu", "GPU:FACTOR (e.g. 5:1.3)");
  if (!g) return g.error();
  char* end = nullptr;
  const double factor = std::strtod(g->second.c_str(), &end);
  if (g->second.empty() || *end != '\0' || !(factor >= 1.0 && factor <= 100.0)) {
    return Error{"--slow-gpu: '" + f + "': FACTOR must be a number in [1, 100]"};
  }
  s.slow_gpus.emplace_back(g->first, factor);
  return true;
}

// --background PATTERN@RATE[,UNTIL].
Result<workload::Scenario::Background> parse_background(const std::string& b) {
  const auto at = b.find('@');
  const auto comma = b.find(',', at == std::string::npos ? 0 : at);
  workload::Scenario::Background bg;
  bg.pattern = b.substr(0, at);
  const std::string form = "--background: '" + b +
                           "' is not PATTERN@RATE[,UNTIL] (PATTERN permutation, incast, "
                           "all_to_all or hotspot; e.g. permutation@100G or incast@50G,2ms)";
  if (at == std::string::npos || (bg.pattern != "permutation" && bg.pattern != "incast" &&
                                  bg.pattern != "all_to_all" && bg.pattern != "hotspot")) {
    return Error{form};
  }
  auto rate =
      parse_rate(b.substr(at + 1, comma == std::string::npos ? std::string::npos : comma - at - 1));
  if (!rate || rate->bits_per_second() <= 0) return Error{form};
  bg.rate = *rate;
  bg.until = SimTime::never();
  if (comma != std::string::npos) {
    auto until = parse_time(b.substr(comma + 1));
    if (!until || until->picoseconds() <= 0) return Error{form};
    bg.until = *until;
  }
  return bg;
}

// --fault, --pcie-fault and --slow-gpu into the scenario (they need the whole step: memoized
// runs start every collective at time zero).
Result<bool> apply_step_faults(const RunOptions& opt, workload::Scenario& s,
                               const topology::Topology& topo) {
  if (opt.faults.empty() && opt.pcie_faults.empty() && opt.slow_gpus.empty() &&
      opt.background.empty()) {
    return true;
  }
  if (!workload::runs_whole_step(s)) {
    return Error{
        "--fault, --pcie-fault and --slow-gpu need step.mode=whole at packet or cell "
        "fidelity (add --set step.mode=whole)"};
  }
  for (const std::string& f : opt.faults) {
    if (auto ok = fabric::parse_fault(f, topo, s.fabric.faults); !ok) {
      return Error{"--fault: " + ok.error().message};
    }
  }
  // Several jobs: GPUs are the topology's, each in some job.
  JobGpus gpus;
  for (const workload::JobSpec& j : s.jobs) {
    for (std::uint32_t g : j.gpus) {
      if (g >= gpus.in_job.size()) gpus.in_job.resize(g + 1, false);
      gpus.in_job[g] = true;
    }
  }
  gpus.count = static_cast<std::uint64_t>(s.jobs.empty() ? s.par.world() : gpus.in_job.size());
  auto all = collective::make_communicator(topo, static_cast<int>(gpus.count));
  if (!all) return all.error();
  for (const std::string& f : opt.pcie_faults) {
    if (auto ok = add_pcie_fault(f, gpus, *all, s); !ok) return ok;
  }
  for (const std::string& f : opt.slow_gpus) {
    if (auto ok = add_slow_gpu(f, gpus, s); !ok) return ok;
  }
  for (const std::string& b : opt.background) {
    auto bg = parse_background(b);
    if (!bg) return bg.error();
    s.background.push_back(*bg);
  }
  return true;
}

// The scenario with the command line's overrides, its topology, and the checks that need both.
// The error is the user error to print.
Result<LoadedRun> load_run(const RunOptions& opt) {
  std::vector<std::string> sets = opt.sets;
  if (!opt.fidelity.empty()) sets.push_back("fidelity=" + opt.fidelity);
  auto loaded = workload::load_scenario(opt.scenario, sets);
  if (!loaded) return loaded.error();
  auto sc = std::move(loaded).value();
  auto topo = topology::load_topology(sc.topology);
  if (!topo) return Error{"topology: " + topo.error().message};
  if (auto ok = workload::validate(sc, *topo); !ok) return ok.error();
  if (auto ok = apply_step_faults(opt, sc, *topo); !ok) return ok.error();
  return LoadedRun{std::move(sets), std::move(sc), std::move(topo).value()};
}

// The comm model of the scenario's fidelity (`ideal` is reused at ideal fidelity).
std::unique_ptr<workload::CommModel> fidelity_comm(const topology::Topology& topo,
                                                   const workload::Scenario& s, pdes::Sync& sync,
                                                   const pdes::EngineOptions& opts,
                                                   std::unique_ptr<workload::CommModel> ideal) {
  const std::string& f = s.fidelity;
  if (f == "packet" || f == "cell") return workload::make_packet_comm(topo, s, sync, opts);
  if (f == "analytical") return workload::make_analytical_comm(topo, s);
  return ideal;
}

// The progress display of the step (rank 0, unless --quiet): its estimate is the step time at
// ideal fidelity (src/cli/progress.hpp).
StepProgress::Options progress_options(const RunOptions& opt, const workload::Scenario& s,
                                       double ideal_step_s, double ideal_wall_s, int rank) {
  StepProgress::Options o;
  o.expected_s = ideal_step_s;
  o.expected_wall_s = ideal_wall_s;
  o.interval_s = opt.progress_s >= 0 ? opt.progress_s : progress_interval();
  o.passes = 2ULL * static_cast<std::uint64_t>(s.par.pp) * static_cast<std::uint64_t>(s.par.vpp) *
             static_cast<std::uint64_t>(s.par.micro_batches());
  o.show = !opt.quiet && rank == 0;
  o.stop_between_passes = s.fidelity == "ideal";
  o.tty = isatty(STDERR_FILENO) == 1;
  return o;
}

// The step at the scenario's fidelity; `wall_s` is the time it took (after the ideal run).
// The HDF5 file's path: -o, or the scenario's stem + .h5.
std::string h5_path(const RunOptions& opt) {
  return opt.output.empty() ? std::filesystem::path(opt.scenario).stem().string() + ".h5"
                            : opt.output;
}

// The whole step's time series: the output file with /nodes, /ports and /samples, appended
// while the run goes (output.sample_interval; none with --no-output or an interval of 0).
struct StepSamples {
  std::unique_ptr<output::SamplesFile> file;
  std::unique_ptr<fabric::FabricSamples> sampler;
  Result<bool> open(const RunOptions& opt, const LoadedRun& run, pdes::EngineOptions& engine) {
    const SimTime interval = run.scenario.output.sample_interval;
    if (opt.no_output || interval <= SimTime::zero()) return true;
    auto f = output::SamplesFile::create(h5_path(opt), "-o", run.topo, interval, MPI_COMM_WORLD);
    if (!f) return f.error();
    file = std::move(f).value();
    sampler = std::make_unique<fabric::FabricSamples>(interval);
    engine.at_window = [h5 = file->samples(), s = sampler.get()](SimTime now, bool last) {
      h5->at_window(*s, now, last);
    };
    return true;
  }
  Result<bool> close() {
    if (!file) return true;
    std::optional<Error> err = file->samples()->error();
    if (auto ok = file->close(); !ok) return ok;
    if (err) return *err;
    return true;
  }
};

Result<workload::StepResult> simulate(const RunOptions& opt, const LoadedRun& run, int rank,
                                      double& wall_s, bool& samples_written) {
  // Several jobs: the first job's scenario stands for the run where one is needed (the
  // progress estimate's pipeline, the folded collectives' TP/CP copies).
  const workload::Scenario s =
      run.scenario.jobs.empty() ? run.scenario : workload::job_scenario(run.scenario, 0);
  pdes::MpiSync sync;
  // The ideal model first: fast, and a collective that cannot run fails here, before a long
  // packet run; its step time (the slowest job's) is the progress display's estimate.
  const auto t0 = std::chrono::steady_clock::now();
  // The whole step at packet or cell fidelity counts its progress in the network bytes each
  // job's collectives move at ideal fidelity (src/cli/work_curve.hpp); one GPU per stage is
  // simulated, so each collective stands for the job's GPUs per stage.
  const bool whole = workload::runs_whole_step(s);
  auto work = std::make_shared<WorkCurve>();
  bool work_ok = true;
  const auto per_stage = [](const workload::Scenario& js) {
    return static_cast<double>(js.par.tp) * js.par.cp * js.par.data_parallel();
  };
  auto ideal_comm = workload::make_ideal_comm(run.topo, s);
  CrossServerRecorder ideal_cross(run.topo, *ideal_comm);
  auto ideal = workload::run_step(s, run.topo, ideal_cross);
  if (!ideal) return ideal.error();
  work_ok = work->add_job(ideal->colls, ideal_cross.cross, per_stage(s));
  double ideal_step_s = ideal->step_s;
  for (std::size_t k = 1; k < run.scenario.jobs.size(); ++k) {
    const workload::Scenario js = workload::job_scenario(run.scenario, k);
    auto job_comm = workload::make_ideal_comm(run.topo, js);
    CrossServerRecorder job_cross(run.topo, *job_comm);
    auto job = workload::run_step(js, run.topo, job_cross);
    if (!job) return Error{"jobs[" + std::to_string(k) + "]: " + job.error().message};
    ideal_step_s = std::max(ideal_step_s, job->step_s);
    work_ok = work->add_job(job->colls, job_cross.cross, per_stage(js)) && work_ok;
  }
  work->finish(ideal_step_s);
  // Background traffic lasts the ideal step unless told otherwise.
  workload::Scenario whole_s = run.scenario;
  for (auto& bg : whole_s.background) {
    if (bg.until == SimTime::never()) bg.until = SimTime::ps(std::llround(ideal_step_s * 1e12));
  }
  const double ideal_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (auto p = pdes::make_partitioner(opt.partition); !p) {
    std::string m = p.error().message;
    if (const auto at = m.find("(allowed: "); at != std::string::npos) m.insert(at + 10, "auto, ");
    return Error{"--partition: " + m};
  }
  // `end` stops the step, not the single collectives whose costs make it up (memoized mode,
  // and the whole step's collectives inside a server): they run to their end.
  pdes::EngineOptions opts = bench_engine_options(opt.threads, SimTime::never(), false, rank);
  opts.partitioner = opt.partition;
  StepProgress::Options popt = progress_options(opt, s, ideal_step_s, ideal_wall_s, rank);
  if (whole && work_ok && ideal_step_s > 0) popt.work = std::move(work);
  StepProgress progress(std::move(popt));
  pdes::EngineOptions step_opts = opts;  // the whole step: one engine run covers the step
  step_opts.end = s.end;
  progress.attach(step_opts, true);
  progress.attach(opts, false);  // engine runs of single collectives: a heartbeat
  auto comm = fidelity_comm(run.topo, s, sync, opts, std::move(ideal_comm));
  StepSamples samples;
  if (whole) {
    if (auto ok = samples.open(opt, run, step_opts); !ok) return ok.error();
  }
  // Several jobs: each job's own model for its collectives inside a server (its TP/CP copies).
  std::vector<std::unique_ptr<workload::CommModel>> job_comms;
  std::vector<workload::CommModel*> folded{comm.get()};
  for (std::size_t k = 1; whole && k < run.scenario.jobs.size(); ++k) {
    job_comms.push_back(
        fidelity_comm(run.topo, workload::job_scenario(run.scenario, k), sync, opts, nullptr));
    folded.push_back(job_comms.back().get());
  }
  // A long whole step that could fold its rails says so before it starts, not only in its
  // summary (docs/workload.md, Rail folding).
  const auto foldable = [&progress](std::uint32_t rails) {
    progress.note("hint: " + fold_hint(rails));
  };
  auto res = whole ? workload::run_whole_step(whole_s, run.topo, folded, sync, step_opts, {},
                                              samples.sampler.get(), foldable)
                   : workload::run_step(run.scenario, run.topo, *comm, progress.on_pass());
  if (auto ok = samples.close(); !ok) return Error{"-o: " + ok.error().message};
  samples_written = samples.file != nullptr;
  if (res) {
    progress.finish(res->step_s, res->interrupted ? "stopped"
                                 : res->complete  ? "done"
                                                  : "incomplete");
  } else {
    progress.finish(0, "failed");
  }
  wall_s = progress.elapsed_s();
  return res;
}

// The HDF5 file of the step (every rank takes part). Returns the exit code.
int write_h5(int rank, const StepReport& rep) {
  const RunOptions& opt = rep.opt;
  const workload::Scenario& s = rep.run.scenario;
  const workload::Parallelism& p = s.par;
  const std::string path = h5_path(opt);
  output::RunMeta meta;
  meta.scenario_path = opt.scenario;
  std::ifstream in(opt.scenario);
  meta.scenario_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  for (const std::string& kv : rep.run.sets) meta.sets += kv + "\n";
  meta.fidelity = s.fidelity;
  meta.cell_bytes = s.fidelity == "cell" ? s.cell.count() : 0;
  meta.model = run_model(s);
  meta.topology = rep.run.topo.name;
  meta.gpu = s.gpu.name;
  meta.tokens_per_step = run_tokens(s);
  meta.gpus = run_gpus(s);
  meta.ranks = rep.ranks;
  meta.threads = opt.threads;
  meta.gpu_stride = static_cast<std::uint32_t>(p.tp * p.cp * p.data_parallel());
  meta.wall_s = rep.wall_s;
  if (auto ok = output::write_step_h5(path, meta, rep.r, MPI_COMM_WORLD, &rep.run.topo,
                                      rep.samples_written);
      !ok) {
    return user_error(rank, ok.error().message);
  }
  if (rank == 0 && !opt.quiet) std::fprintf(stderr, "stepsim: wrote %s\n", path.c_str());
  return kExitOk;
}

// "TP 8, PP 8 x 1, CP 1, EP 1, DP 16".
std::string parallel_text(const workload::Parallelism& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "TP %d, PP %d x %d, CP %d, EP %d, DP %d", p.tp, p.pp, p.vpp, p.cp,
                p.ep, p.data_parallel());
  return buf;
}

// The heading: the scenario, or each job of a multi-job one.
void print_heading(const StepReport& rep) {
  const workload::Scenario& s = rep.run.scenario;
  if (s.jobs.empty()) {
    std::printf("# stepsim run %s: %s on %s, %d GPUs %s (%s), fidelity %s, ranks %d\n",
                rep.opt.scenario.c_str(), s.model.name.c_str(), rep.run.topo.name.c_str(),
                s.par.world(), s.gpu.name.c_str(), parallel_text(s.par).c_str(), s.fidelity.c_str(),
                rep.ranks);
    return;
  }
  std::size_t gpus = 0;
  for (const workload::JobSpec& j : s.jobs) gpus += j.gpus.size();
  std::printf("# stepsim run %s: %zu jobs on %s, %zu GPUs %s, fidelity %s, ranks %d\n",
              rep.opt.scenario.c_str(), s.jobs.size(), rep.run.topo.name.c_str(), gpus,
              s.gpu.name.c_str(), s.fidelity.c_str(), rep.ranks);
  for (const workload::JobSpec& j : s.jobs) {
    std::printf("# job %s: %s on GPUs %s (%zu GPUs; %s)\n", j.name.c_str(), j.model.name.c_str(),
                j.gpus_text.c_str(), j.gpus.size(), parallel_text(j.par).c_str());
  }
}

// Each job's step time, MFU and tokens/s (a multi-job run).
void print_jobs(const workload::StepResult& r) {
  if (r.jobs.empty()) return;
  std::printf("# jobs (each from time 0 on the shared fabric)\n");
  for (const workload::JobResult& j : r.jobs) {
    const std::string label = "job " + j.name;
    if (r.complete) {
      std::printf("%-20s step %s, MFU %.2f %%, %.4g tokens/s per GPU (GPUs %s)\n", label.c_str(),
                  sim_text(j.step_s).c_str(), j.mfu * 100, j.tokens_per_step / j.step_s / j.gpus,
                  j.gpus_text.c_str());
    } else {
      std::printf("%-20s step %s (the run did not complete; GPUs %s)\n", label.c_str(),
                  sim_text(j.step_s).c_str(), j.gpus_text.c_str());
    }
  }
}

// The heading, the status when the step did not finish, and the step time, MFU and tokens/s
// (several jobs: the run's, then each job's).
void print_headline(const StepReport& rep) {
  const workload::Scenario& s = rep.run.scenario;
  const workload::Parallelism& p = s.par;
  const workload::StepResult& r = rep.r;
  print_heading(rep);
  if (r.interrupted) {
    std::printf(
        "# status: INTERRUPTED (the numbers below cover what was done; the HDF5 file "
        "says complete = 0)\n");
  } else if (r.failed_transfers > 0) {
    std::printf(
        "# status: INCOMPLETE (%llu RDMA transfers failed: the transport's retry limit "
        "was exceeded, e.g. a link down longer than its retries; the GPUs waiting on them "
        "stopped)\n",
        static_cast<unsigned long long>(r.failed_transfers));
  } else if (!r.complete) {
    std::printf("# status: INCOMPLETE (stopped at end = %s)\n", to_string(s.end).c_str());
  }
  if (!r.jobs.empty()) {
    std::printf("step time            %s  (the last job to finish: %s)\n",
                sim_text(r.step_s).c_str(), r.jobs[r.critical_job].name.c_str());
  } else {
    std::printf("step time            %s\n", sim_text(r.step_s).c_str());
  }
  if (r.complete && !r.jobs.empty()) {
    std::printf(
        "MFU                  %.2f %%  (all jobs' GPUs over the step time; %.4g model "
        "FLOP)\n",
        r.mfu * 100, r.model_flops);
  } else if (r.complete) {
    std::printf("MFU                  %.2f %%  (%.4g model FLOP per step, %s peak %.4g FLOP/s)\n",
                r.mfu * 100, r.model_flops, s.model.precision.c_str(), r.peak_flops);
  } else {  // the whole step's FLOPs over part of its time would overstate it
    std::printf("MFU                  n/a (the step did not complete)\n");
  }
  if (r.complete && !r.jobs.empty()) {
    double tokens = 0;
    double gpus = 0;
    for (const workload::JobResult& j : r.jobs) {
      tokens += j.tokens_per_step;
      gpus += j.gpus;
    }
    std::printf("tokens per second    %.4g per GPU (all jobs over the step time)\n",
                tokens / r.step_s / gpus);
  } else if (r.complete) {
    std::printf("tokens per second    %.4g per GPU\n",
                static_cast<double>(p.global_batch) * s.model.seq_len / r.step_s / p.world());
  } else {  // likewise: the whole batch's tokens over part of the time
    std::printf("tokens per second    n/a (the step did not complete)\n");
  }
  print_jobs(r);
}

// Where the critical stage's time went.
void print_time_went(const workload::StepResult& r) {
  if (r.jobs.empty()) {
    std::printf("# where the time went (stage %u, the last to finish)\n", r.critical_stage);
  } else {
    std::printf("# where the time went (job %s, stage %u, the last to finish)\n",
                r.jobs[r.critical_job].name.c_str(), r.critical_stage);
  }
  std::printf("compute              %s\n", sim_text(r.compute_s).c_str());
  for (int g = 0; g < workload::kCommGroups; ++g) {
    // Pipeline sends never block the compute stream: their time is in the bubble.
    if (r.collectives[g] == 0 || g == static_cast<int>(CommGroup::kPp)) continue;
    std::printf("exposed %-12s %s\n", group_name(g), sim_text(r.exposed_s[g]).c_str());
  }
  if (r.ep_hidden_s > 0) {
    std::printf("hidden ep            %s  (moe.overlap: beside another pass)\n",
                sim_text(r.ep_hidden_s).c_str());
  }
  std::printf("pipeline bubble      %s  (waiting for other stages and pipeline sends)\n",
              sim_text(r.bubble_s).c_str());
  std::printf("optimizer            %s\n", sim_text(r.optimizer_s).c_str());
}

// busbw per group, collective completion times and RDMA message completion times.
void print_collectives(const workload::StepResult& r) {
  std::printf("# collectives (all stages)\n");
  for (int g = 0; g < workload::kCommGroups; ++g) {
    if (r.collectives[g] == 0) continue;
    std::printf("busbw %-14s %.2f GB/s  (%" PRIu64 " collectives, %.4g bytes)\n", group_name(g),
                r.busbw_gbs[g], r.collectives[g], r.comm_bytes[g]);
  }
  std::printf("collective time      p50 %.2f us, p99 %.2f us, max %.2f us (network groups)\n",
              r.cct_p50_us, r.cct_p99_us, r.cct_max_us);
  if (r.messages > 0) {
    std::printf("message FCT          p50 %.2f us, p99 %.2f us, max %.2f us (%" PRIu64
                " RDMA messages, 9%% bins)\n",
                r.fct_p50_us, r.fct_p99_us, r.fct_max_us, r.messages);
  }
}

// How many /flows rows the HDF5 file gets (output.flows), of how many.
void print_flows(const workload::StepResult& r) {
  if (r.flows_sample == 0) {
    std::printf("flows                none (output.flows none; %" PRIu64 " rows)\n",
                r.flow_rows_total);
  } else if (r.flows_sample > 1) {
    std::printf("flows                %zu rows (sampled 1 in %u collectives, of %" PRIu64 ")\n",
                r.flows.size(), r.flows_sample, r.flow_rows_total);
  } else {
    std::printf("flows                %zu rows (all)\n", r.flows.size());
  }
}

// What the fabric and the engine saw, and the digest.
void print_fabric(const StepReport& rep) {
  const workload::Scenario& s = rep.run.scenario;
  const workload::StepResult& r = rep.r;
  const std::string cells =
      s.fidelity == "cell" ? " in " + to_string(s.cell) + " cells" : std::string();
  std::printf("# fabric (%s fidelity%s: %" PRIu64 " distinct collectives simulated)\n",
              s.fidelity.c_str(), cells.c_str(), r.distinct_collectives);
  if (r.folded_rails > 1) {
    std::printf(
        "rails folded         %u rails ran as rail 0 (step.fold rails): the fabric's "
        "numbers and flows below are rail 0's plane\n",
        r.folded_rails);
  }
  if (r.foldable_rails > 1) {
    std::printf("hint                 %s\n", fold_hint(r.foldable_rails).c_str());
  }
  std::printf("drops                %" PRIu64 "\n", r.drops);
  std::printf("retransmissions      %" PRIu64 "\n", r.retransmissions);
  std::printf("PFC pause time       %s (summed over ports)\n", sim_text(r.paused_s).c_str());
  print_flows(r);
  std::printf("# engine: %" PRIu64 " events, wall %.2f s\n", r.events, rep.wall_s);
  if (r.events > 0) {
    print_partition(
        "partition " + rep.opt.partition + " over " + std::to_string(rep.ranks) + " ranks",
        r.engine);
  }
  std::printf("digest           %s\n", digest_hex(r.digest).c_str());
}

// The summary as --json writes it (other tools read these keys).
nlohmann::json step_json(const StepReport& rep) {
  const workload::Scenario& s = rep.run.scenario;
  const workload::StepResult& r = rep.r;
  nlohmann::json j;
  j["command"] = "run";
  j["version"] = kVersion;
  j["scenario"] = rep.opt.scenario;
  j["model"] = run_model(s);
  j["topology"] = rep.run.topo.name;
  j["gpus"] = run_gpus(s);
  j["gpu"] = s.gpu.name;
  j["fidelity"] = s.fidelity;
  j["cell_bytes"] = s.fidelity == "cell" ? s.cell.count() : 0;
  j["folded_rails"] = r.folded_rails;
  j["foldable_rails"] = r.foldable_rails;
  j["complete"] = r.complete;
  j["step_s"] = r.step_s;
  j["mfu"] = r.complete ? nlohmann::json(r.mfu) : nlohmann::json(nullptr);
  j["model_flops"] = r.model_flops;
  j["compute_s"] = r.compute_s;
  j["bubble_s"] = r.bubble_s;
  j["optimizer_s"] = r.optimizer_s;
  if (r.ep_hidden_s > 0) j["ep_hidden_s"] = r.ep_hidden_s;
  for (int g = 0; g < workload::kCommGroups; ++g) {
    j["exposed_s"][group_name(g)] = r.exposed_s[g];
    j["busbw_gbs"][group_name(g)] = r.busbw_gbs[g];
    j["collectives"][group_name(g)] = r.collectives[g];
  }
  j["collective_time_us"] = {{"p50", r.cct_p50_us}, {"p99", r.cct_p99_us}, {"max", r.cct_max_us}};
  j["message_fct_us"] = {
      {"p50", r.fct_p50_us}, {"p99", r.fct_p99_us}, {"max", r.fct_max_us}, {"count", r.messages}};
  j["drops"] = r.drops;
  j["retransmissions"] = r.retransmissions;
  j["pfc_paused_s"] = r.paused_s;
  j["flow_rows"] = r.flows.size();
  j["flow_rows_total"] = r.flow_rows_total;
  j["flows_sample"] = r.flows_sample;
  j["events"] = r.events;
  j["engine"] = engine_json(rep.opt.partition, rep.ranks, r.engine);
  j["wall_s"] = rep.wall_s;
  j["digest"] = digest_hex(r.digest);
  for (const workload::JobResult& x : r.jobs) {
    nlohmann::json job;
    job["name"] = x.name;
    job["gpus"] = x.gpus_text;
    job["gpu_count"] = x.gpus;
    job["step_s"] = x.step_s;
    job["mfu"] = r.complete ? nlohmann::json(x.mfu) : nlohmann::json(nullptr);
    job["tokens_per_s_per_gpu"] = r.complete && x.step_s > 0
                                      ? nlohmann::json(x.tokens_per_step / x.step_s / x.gpus)
                                      : nlohmann::json(nullptr);
    job["model_flops"] = x.model_flops;
    job["critical_stage"] = x.critical_stage;
    job["compute_s"] = x.compute_s;
    job["bubble_s"] = x.bubble_s;
    job["optimizer_s"] = x.optimizer_s;
    for (int g = 0; g < workload::kCommGroups; ++g)
      job["exposed_s"][group_name(g)] = x.exposed_s[g];
    job["collectives"] = x.collectives;
    j["jobs"].push_back(job);
  }
  return j;
}

}  // namespace

int RunCommand::execute(int rank, int ranks) {
  auto run = load_run(opt_);
  if (!run) return user_error(rank, run.error().message);
  {  // Every output is checked before the step is simulated, not found unwritable after it.
    std::vector<OutputFile> outputs;
    const std::string h5 = cmd_->count("-o") > 0
                               ? opt_.output
                               : std::filesystem::path(opt_.scenario).stem().string() + ".h5";
    if (!opt_.no_output) add_output(outputs, *cmd_, "-o", h5);
    add_output(outputs, *cmd_, "--json", opt_.json_path);
    add_output(outputs, *cmd_, "--trace", opt_.trace);
    if (auto ok = check_outputs_once(outputs, {opt_.scenario, run->scenario.topology}, rank); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  if (run->scenario.fidelity == "packet" || run->scenario.fidelity == "cell") {
    if (auto ok = check_fabric_memory(run->topo, ranks); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  // The whole step keeps every group busy at once: spreading LPs evenly over the ranks balances
  // each window (window parallelism 1.63 against METIS's 1.16 on GPT-3 175B at 2 ranks;
  // docs/engine.md). A single collective's run is balanced by its traffic (METIS).
  if (opt_.partition == "auto") {
    opt_.partition = workload::runs_whole_step(run->scenario) ? "cyclic" : "metis";
  }
  double wall_s = 0;
  bool samples_written = false;
  auto res = simulate(opt_, *run, rank, wall_s, samples_written);
  if (!res) return user_error(rank, res.error().message);
  const StepReport rep{opt_, *run, *res, ranks, wall_s, samples_written};
  if (!opt_.no_output) {
    if (const int rc = write_h5(rank, rep); rc != kExitOk) return rc;
  }
  if (!opt_.trace.empty() && rank == 0) {
    const workload::Parallelism& p = run->scenario.par;
    const auto stride = static_cast<std::uint32_t>(p.tp * p.cp * p.data_parallel());
    if (auto ok = output::write_chrome_trace(opt_.trace, rep.r, stride); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  const bool interrupted = rep.r.interrupted;
  if (rank != 0) return interrupted ? interrupted_exit_code() : kExitOk;
  print_headline(rep);
  print_time_went(rep.r);
  print_collectives(rep.r);
  print_fabric(rep);
  if (!opt_.json_path.empty()) {
    if (const int rc = write_json(rank, opt_.json_path, step_json(rep)); rc != kExitOk) return rc;
  }
  if (interrupted) return interrupted_exit_code();
  return rep.r.complete ? kExitOk : kExitFailure;
}

}  // namespace stepsim::cli
