#include "src/cli/run_command.hpp"
#include "src/cli/data_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "src/cli/choices.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/memory_report.hpp"
#include "src/cli/phase_profile.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "src/cli/run_summary.hpp"
#include "src/cli/sweep.hpp"
#include "src/cli/work_curve.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/pcie.hpp"
#include "stepsim/output/chrome_trace.hpp"
#include "stepsim/output/samples_h5.hpp"
#include "stepsim/output/step_h5.hpp"
#include "stepsim/output/text_file.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/version.hpp"
#include "stepsim/workload/simulate.hpp"
#include "stepsim/workload/step.hpp"
#include "stepsim/workload/step_output.hpp"

namespace stepsim::cli {

RunCommand::RunCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "run", "One training step of a scenario (workloads/*.yaml): step time, MFU, breakdown");
  cmd_->footer(
      "Step mode (--set step.mode=...): auto, the default, runs the whole step at packet and "
      "cell fidelity (every GPU's schedule in one simulation, all groups' traffic on one fabric) "
      "and the memoized step at ideal and analytical fidelity; memoized runs one pipeline with "
      "each distinct collective simulated alone (faster, no contention between groups); whole "
      "needs packet or cell fidelity. The summary, --json and the HDF5 file name the mode that "
      "ran (docs/workload.md).");
  cmd_->add_option("scenario", opt_.scenario, "Scenario file (workloads/*.yaml)")->required();
  cmd_->add_option(
      "--set", opt_.sets,
      "Override a scenario key: key=value, or one job's: jobs.NAME.key=value (repeatable)");
  cmd_->add_option("--fidelity", opt_.fidelity, fidelity_help(fidelity_choices()))
      ->check(
          [](const std::string& v) {
            if (!v.empty()) return std::string();
            workload::Scenario defaults;
            const std::vector<std::string> fidelities =
                workload::scenario_param_table(defaults).choices("fidelity");
            return "an empty fidelity: give " + list_words(fidelities) +
                   " (or leave --fidelity out for the scenario's)";
          },
          "FIDELITY");
  cmd_->add_option("--threads", opt_.threads, "OpenMP threads per rank")->capture_default_str();
  cmd_->add_option("--partition", opt_.partition,
                   "Partitioner of LPs onto ranks: auto (spread for the whole step, metis "
                   "otherwise) or " +
                       list_words(partition_choices()) + " (stepsim list partitioners)")
      ->capture_default_str();
  cmd_->add_option("--json", opt_.json_path,
                   "Write the summary as JSON to this file (a sweep: the table of its variants; "
                   "default SCENARIO stem + -sweep.json)");
  cmd_->add_option("--csv", opt_.csv_path,
                   "Write the summary as a CSV row to this file (a sweep: a row per variant; "
                   "default SCENARIO stem + -sweep.csv)");
  cmd_->add_option("-o,--output", opt_.output,
                   "HDF5 file of the step (docs/hdf5-schema.md); default: SCENARIO stem + .h5");
  cmd_->add_flag("--no-output", opt_.no_output, "Do not write the HDF5 file");
  cmd_->add_option(
      "--trace", opt_.trace,
      "Write the op timeline as a Chrome/Perfetto trace (JSON) to this file: a "
      "process per stage (memoized step), or per traced GPU (the whole step, --trace-gpus)");
  cmd_->add_option("--trace-gpus", opt_.trace_gpus,
                   "The whole step: the GPUs --trace shows, each its own process with its ops "
                   "and collectives: GPUs and ranges, e.g. 0-7,64 (default: each job's "
                   "reference pipeline, one GPU per stage)")
      ->check(
          [](const std::string& v) {
            return v.empty() ? std::string(
                                   "an empty GPU list: give GPUs and ranges joined by "
                                   "commas, e.g. 0-7,64")
                             : std::string();
          },
          "LIST");
  cmd_->add_option("--trace-max-events", opt_.trace_max_events,
                   "Most ops and collective events --trace holds, the earliest first; past it "
                   "the trace stops and says so (default " +
                       std::to_string(output::kDefaultTraceEvents) + ")")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000000000}));
  cmd_->add_option("--progress", opt_.progress_s,
                   "Seconds between progress lines on stderr (0.5 on a terminal, 10 in a log by "
                   "default; 0: one per report)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd_->add_flag("--quiet", opt_.quiet, "No progress output");
  cmd_->add_flag("--profile", opt_.profile,
                 "Where the time goes: wall and CPU per phase (set-up, ideal pass, engine run, "
                 "output) on stderr after the summary; also STEPSIM_PROFILE=1");
  cmd_->add_option("--fault", opt_.faults,
                   "The whole step: a link fault during the step (repeatable): down:LINK@TIME, "
                   "up:LINK@TIME, lanes:LINK@TIME=N, flap:LINK@START,PERIOD,DOWN,COUNT");
  cmd_->add_option("--pcie-fault", opt_.pcie_faults,
                   "The whole step: GPU's NIC retrains its PCIe link lower (repeatable): "
                   "GPU:GEN@TIME, e.g. 12:gen4@2ms");
  cmd_->add_option("--slow-gpu", opt_.slow_gpus,
                   "The whole step: a straggler (repeatable): GPU:FACTOR, its compute takes "
                   "FACTOR times as long, e.g. 5:1.3");
  cmd_->add_option("--background", opt_.background,
                   "The whole step: background traffic on the same fabric (repeatable): "
                   "PATTERN@RATE[,UNTIL], PATTERN " +
                       list_words(background_choices()) +
                       ", RATE per flow (e.g. 100G), UNTIL the simulated time it stops (default: "
                       "the ideal step time), e.g. permutation@200G");
}

namespace {

using workload::CommGroup;
using workload::OpKind;

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
                            const collective::Communicator& all, const topology::Topology& topo,
                            workload::Scenario& s) {
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
  const topology::PortId nic = all.gpus[g->first].nic;
  // A degrade trains the link down: a generation at or above the link's is no fault (the
  // NIC's link as sized for its port, nic.pcie).
  const topology::Port& port = topo.ports[nic];
  const nic::PcieParams link = nic::size_for_port(
      s.nic.pcie, port.link == topology::kNone ? DataRate() : topo.link_rate(port.link));
  if (gen[3] - '0' >= link.gen) {
    return Error{"--pcie-fault: '" + f + "': the link of GPU " + std::to_string(g->first) +
                 "'s NIC is already gen" + std::to_string(link.gen) + "x" +
                 std::to_string(link.lanes) + ": a fault trains it down to gen3..gen" +
                 std::to_string(link.gen - 1)};
  }
  s.nic.pcie_faults.push_back({nic, *when, gen[3] - '0'});
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
  const std::vector<std::string> patterns = background_choices();
  const std::string form = "--background: '" + b + "' is not PATTERN@RATE[,UNTIL] (PATTERN " +
                           list_words(patterns) + "; e.g. permutation@100G or incast@50G,2ms)";
  if (at == std::string::npos ||
      std::find(patterns.begin(), patterns.end(), bg.pattern) == patterns.end()) {
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

// The GPUs of the step: one job's 0..world-1, or the topology's GPUs in some job.
JobGpus job_gpus(const workload::Scenario& s) {
  JobGpus gpus;
  for (const workload::JobSpec& j : s.jobs) {
    for (std::uint32_t g : j.gpus) {
      if (g >= gpus.in_job.size()) gpus.in_job.resize(g + 1, false);
      gpus.in_job[g] = true;
    }
  }
  gpus.count = static_cast<std::uint64_t>(s.jobs.empty() ? s.par.world() : gpus.in_job.size());
  return gpus;
}

// The whole step's traced GPUs (StepRequest::trace_gpus; empty: the default), or none without a
// whole-step trace. --trace-gpus and --trace-max-events only with --trace; a GPU selection only
// in the whole step (the memoized one simulates one GPU per stage, the processes of its trace).
Result<std::optional<std::vector<std::uint32_t>>> trace_selection(const RunOptions& opt,
                                                                  const workload::Scenario& s) {
  using Selection = std::optional<std::vector<std::uint32_t>>;
  const bool gpus_given = !opt.trace_gpus.empty();
  if (opt.trace.empty()) {
    if (gpus_given || opt.trace_max_events >= 0) {
      return Error{std::string(gpus_given ? "--trace-gpus" : "--trace-max-events") +
                   " shapes the --trace file: give --trace FILE.json too"};
    }
    return Selection{};
  }
  if (!workload::step_execution(s).whole) {
    if (gpus_given) {
      return Error{
          "--trace-gpus: the memoized step simulates one GPU per pipeline stage, and its "
          "trace shows those; tracing chosen GPUs needs the whole step (step.mode auto or "
          "whole, at packet or cell fidelity; this run: step.mode " +
          s.step_mode + ", fidelity " + s.fidelity + ")"};
    }
    return Selection{};
  }
  if (!gpus_given) return Selection{std::vector<std::uint32_t>{}};
  const JobGpus gpus = job_gpus(s);
  std::vector<bool> allowed = gpus.in_job;
  if (allowed.empty()) allowed.assign(gpus.count, true);
  const std::string allowed_text = s.jobs.empty() ? "GPUs 0.." + std::to_string(gpus.count - 1)
                                                  : std::string("a GPU of some job's gpus");
  auto list = gpu_list_option("--trace-gpus", opt.trace_gpus, allowed, allowed_text);
  if (!list) return list.error();
  return Selection{std::move(list).value()};
}

// --fault, --pcie-fault and --slow-gpu into the scenario (they need the whole step: memoized
// runs start every collective at time zero).
Result<bool> apply_step_faults(const RunOptions& opt, workload::Scenario& s,
                               const topology::Topology& topo) {
  if (opt.faults.empty() && opt.pcie_faults.empty() && opt.slow_gpus.empty() &&
      opt.background.empty()) {
    return true;
  }
  if (!workload::step_execution(s).timed_events()) {
    return Error{
        "--fault, --pcie-fault, --slow-gpu and --background need the whole step (step.mode "
        "auto or whole, at packet or cell fidelity; this run: step.mode " +
        s.step_mode + ", fidelity " + s.fidelity + ")"};
  }
  for (const std::string& f : opt.faults) {
    if (auto ok = fabric::parse_fault(f, topo, s.fabric.faults); !ok) {
      return Error{"--fault: " + ok.error().message};
    }
  }
  // Several jobs: GPUs are the topology's, each in some job.
  const JobGpus gpus = job_gpus(s);
  auto all = collective::make_communicator(topo, static_cast<int>(gpus.count));
  if (!all) return all.error();
  for (const std::string& f : opt.pcie_faults) {
    if (auto ok = add_pcie_fault(f, gpus, *all, topo, s); !ok) return ok;
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

// The scenario with the command line's overrides, its topology (built once its estimate from
// the counts fits the memory of `ranks` ranks), and the checks that need both. The error is the
// user error to print. Collective: every rank calls it.
Result<LoadedRun> load_run(const RunOptions& opt, int ranks) {
  std::vector<std::string> sets = opt.sets;
  if (!opt.fidelity.empty()) sets.push_back("fidelity=" + opt.fidelity);
  auto loaded = load_scenario_file(opt.scenario, sets);
  if (!loaded) return loaded.error();
  auto sc = std::move(loaded).value();
  const bool fabric = sc.fidelity == "packet" || sc.fidelity == "cell";
  auto topo = load_topology_within_memory(sc.topology, ranks, fabric);
  if (!topo)
    return Error{"topology: " + not_found_note(topo.error(), sc.topology, "topologies").message};
  if (auto ok = workload::validate(sc, *topo); !ok) return ok.error();
  if (auto ok = apply_step_faults(opt, sc, *topo); !ok) return ok.error();
  if (auto ok = trace_selection(opt, sc); !ok) return ok.error();
  return LoadedRun{std::move(sets), std::move(sc), std::move(topo).value()};
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
  std::string path;
  Result<bool> open(const RunOptions& opt, const LoadedRun& run, pdes::EngineOptions& engine) {
    const SimTime interval = run.scenario.output.sample_interval;
    if (opt.no_output || interval <= SimTime::zero()) return true;
    path = h5_path(opt);
    auto f = output::SamplesFile::create(path, "-o", run.topo, interval, MPI_COMM_WORLD);
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
    // A failed append is the cause; the close that follows it fails too.
    std::optional<Error> err = file->samples()->error();
    auto ok = file->close();
    if (err) return Error{"-o: '" + path + "': " + err->message};
    return ok;
  }
};

// `output_error`: the time series could not be written (a full disk): the step's results stand,
// the file does not.
Result<workload::StepResult> simulate(const RunOptions& opt, const LoadedRun& run, int rank,
                                      double& wall_s, bool& samples_written,
                                      std::optional<Error>& output_error, PhaseProfile& prof) {
  // Several jobs: the first job's scenario stands for the run where one is needed (the
  // progress estimate's pipeline, the folded collectives' TP/CP copies).
  const workload::Scenario s =
      run.scenario.jobs.empty() ? run.scenario : workload::job_scenario(run.scenario, 0);
  const std::unique_ptr<pdes::Sync> transport = pdes::make_sync();
  pdes::Sync& sync = *transport;
  // The ideal model first: fast, and a collective that cannot run fails here, before a long
  // packet run; its step time (the slowest job's) is the progress display's estimate.
  const auto t0 = std::chrono::steady_clock::now();
  // The whole step at packet or cell fidelity counts its progress in the network bytes each
  // job's collectives move at ideal fidelity (src/cli/work_curve.hpp); one GPU per stage is
  // simulated, so each collective stands for the job's GPUs per stage.
  const bool whole = workload::step_execution(s).whole;
  auto work = std::make_shared<WorkCurve>();
  bool work_ok = true;
  const auto per_stage = [](const workload::Scenario& js) {
    return static_cast<double>(js.par.tp) * js.par.cp * js.par.data_parallel();
  };
  // At analytical fidelity the step itself takes about as long as the estimate would: it runs
  // without one (a third of the run's CPU time saved; BENCHMARKS.md).
  const bool estimate = s.fidelity != "analytical";
  std::unique_ptr<workload::CommModel> ideal_comm;
  double ideal_step_s = 0;
  if (estimate) {
    ideal_comm = workload::make_ideal_comm(run.topo, s);
    CrossServerRecorder ideal_cross(run.topo, *ideal_comm);
    auto ideal = workload::run_step(s, run.topo, ideal_cross);
    if (!ideal) return ideal.error();
    work_ok = work->add_job(ideal->colls, ideal_cross.cross, per_stage(s));
    ideal_step_s = ideal->step_s;
  }
  for (std::size_t k = 1; estimate && k < run.scenario.jobs.size(); ++k) {
    const workload::Scenario js = workload::job_scenario(run.scenario, k);
    auto job_comm = workload::make_ideal_comm(run.topo, js);
    CrossServerRecorder job_cross(run.topo, *job_comm);
    auto job = workload::run_step(js, run.topo, job_cross);
    if (!job) return Error{"jobs[" + std::to_string(k) + "]: " + job.error().message};
    ideal_step_s = std::max(ideal_step_s, job->step_s);
    work_ok = work->add_job(job->colls, job_cross.cross, per_stage(js)) && work_ok;
  }
  work->finish(ideal_step_s);
  const double ideal_wall_s =
      estimate ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : -1;
  prof.phase("engine run", "");
  if (auto p = pdes::make_partitioner(opt.partition); !p) {
    std::string m = p.error().message;
    if (const auto at = m.find("(allowed: "); at != std::string::npos) m.insert(at + 10, "auto, ");
    return Error{"--partition: " + m};
  }
  // `end` stops the step, not the single collectives whose costs make it up (memoized mode,
  // and the whole step's collectives inside a server): they run to their end.
  workload::StepRequest req;
  req.engine = bench_engine_options(opt.threads, SimTime::never(), false, rank);
  req.engine.partitioner = opt.partition;
  StepProgress::Options popt = progress_options(opt, s, ideal_step_s, ideal_wall_s, rank);
  if (whole && work_ok && ideal_step_s > 0) popt.work = std::move(work);
  StepProgress progress(std::move(popt));
  req.step_engine = req.engine;  // the whole step: one engine run covers the step
  req.step_engine.end = s.end;
  progress.attach(req.step_engine, true);
  progress.attach(req.engine, false);  // engine runs of single collectives: a heartbeat
  req.on_pass = progress.on_pass();
  req.ideal = std::move(ideal_comm);
  if (auto traced = trace_selection(opt, run.scenario); traced && *traced) {
    req.trace = true;
    req.trace_gpus = std::move(traced).value().value();
  }
  // Background traffic lasts the ideal step unless told otherwise.
  req.background_until = SimTime::ps(std::llround(ideal_step_s * 1e12));
  for (const workload::Scenario::Background& bg : s.background) {
    if (whole && bg.until != SimTime::never() && bg.until > req.background_until) {
      progress.note("--background " + bg.pattern + ": UNTIL " + sim_text(bg.until.seconds()) +
                    " lies past the step's estimate (" + sim_text(ideal_step_s) +
                    "): a first run finds the step's end, where the background then stops");
      break;
    }
  }
  StepSamples samples;
  if (whole) {
    if (auto ok = samples.open(opt, run, req.step_engine); !ok) return ok.error();
  }
  req.samples = samples.sampler.get();
  // A long whole step that could fold its rails says so before it starts, not only in its
  // summary (docs/workload.md, Rail folding).
  req.foldable = [&progress](std::uint32_t rails) { progress.note("hint: " + fold_hint(rails)); };
  auto res = workload::simulate_step(run.scenario, run.topo, sync, std::move(req));
  if (auto ok = samples.close(); !ok) output_error = ok.error();
  samples_written = samples.file != nullptr && !output_error;
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

// The HDF5 file of the step (every rank takes part): the error, if it could not be written.
std::optional<Error> write_h5(int rank, const StepReport& rep, const output::StepRows& rows) {
  const RunOptions& opt = rep.opt;
  const workload::Scenario& s = rep.run.scenario;
  const std::string path = h5_path(opt);
  output::RunMeta meta;
  meta.scenario_path = opt.scenario;
  std::ifstream in(opt.scenario);
  meta.scenario_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  for (const std::string& kv : rep.run.sets) meta.sets += kv + "\n";
  meta.fidelity = s.fidelity;
  meta.step_mode = workload::resolved_step_mode(s);
  meta.cell_bytes = s.fidelity == "cell" ? s.fabric.cell_size.count() : 0;
  meta.model = run_model(s);
  meta.topology = rep.run.topo.name;
  meta.gpu = s.gpu.name;
  meta.tokens_per_step = run_tokens(s);
  meta.gpus = run_gpus(s);
  meta.ranks = rep.ranks;
  meta.threads = opt.threads;
  meta.wall_s = rep.wall_s;
  add_memory_meta(s, rep.memory, meta);
  if (auto ok = output::write_step_h5(path, meta, rows, MPI_COMM_WORLD, &rep.run.topo,
                                      rep.samples_written);
      !ok) {
    return ok.error();
  }
  if (rank == 0 && !opt.quiet) std::fprintf(stderr, "stepsim: wrote %s\n", path.c_str());
  return std::nullopt;
}

}  // namespace

int RunCommand::execute_one(int rank, int ranks, RunOptions& o, nlohmann::json* row) {
  const bool sweep = row != nullptr;
  PhaseProfile prof(o.profile || profile_requested_by_environment());
  prof.phase("set-up", "scenario, topology, input and output checks");
  auto run = load_run(o, ranks);
  if (!run) return user_error(rank, run.error().message);
  const std::vector<JobMemory> memory = scenario_memory(run->scenario);
  if (auto ok = check_gpu_memory(run->scenario, memory, rank); !ok) {
    return user_error(rank, ok.error().message);
  }
  {  // Every output is checked before the step is simulated, not found unwritable after it.
    std::vector<OutputFile> outputs;
    if (sweep) {  // each variant's own files (the table's were checked before the first)
      if (!o.no_output) outputs.push_back({"-o", h5_path(o)});
      if (!o.trace.empty()) outputs.push_back({"--trace", o.trace});
    } else {
      // An -o given empty is refused by name, not replaced by the default.
      if (!o.no_output)
        add_output(outputs, *cmd_, "-o", cmd_->count("-o") > 0 ? o.output : h5_path(o));
      add_output(outputs, *cmd_, "--json", o.json_path);
      add_output(outputs, *cmd_, "--trace", o.trace);
    }
    if (auto ok = check_outputs_once(outputs, {o.scenario, run->scenario.topology}, rank); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  // The whole step keeps every group busy at once: spreading LPs evenly over the ranks balances
  // each window (window parallelism 1.63 against METIS's 1.16 on GPT-3 175B at 2 ranks;
  // docs/engine.md). A single collective's run is balanced by its traffic (METIS).
  if (o.partition == "auto") {
    o.partition = workload::step_execution(run->scenario).auto_partitioner();
  }
  double wall_s = 0;
  bool samples_written = false;
  // An output that cannot be written (a full disk) loses only itself: the summary is still
  // printed, then the error, and the exit code is 2.
  std::optional<Error> output_error;
  prof.phase("ideal pass", "the step at ideal fidelity: its collectives, the progress estimate");
  auto res = simulate(o, *run, rank, wall_s, samples_written, output_error, prof);
  if (!res) return user_error(rank, res.error().message);
  prof.phase("output", "the HDF5 file, --trace, --json");
  const StepReport rep{o, *run, *res, ranks, wall_s, samples_written, memory};
  const workload::Parallelism& par = run->scenario.par;
  const auto stride = static_cast<std::uint32_t>(par.tp * par.cp * par.data_parallel());
  const bool trace = !o.trace.empty() && rank == 0;
  // The HDF5 file alone makes its op and collective rows as it writes them (a copy of 250,000
  // rows in memory saved); the Perfetto trace needs them held.
  const output::StepRows rows =
      (!o.no_output || trace)
          ? workload::step_rows(rep.r, stride,
                                trace ? workload::RowsHeld::kHeld : workload::RowsHeld::kOnDemand)
          : output::StepRows{};
  if (!o.no_output && !output_error) output_error = write_h5(rank, rep, rows);
  if (trace && !output_error) {
    output::TraceOptions topt;
    topt.gpu_stride = stride;
    if (o.trace_max_events > 0) topt.max_events = static_cast<std::uint64_t>(o.trace_max_events);
    auto ok = output::write_chrome_trace(o.trace, rows, topt);
    if (!ok) {
      output_error = ok.error();
    } else if (!ok->note.empty()) {
      std::fprintf(stderr, "stepsim: --trace: %s\n", ok->note.c_str());
    }
  }
  const bool interrupted = rep.r.interrupted;
  if (rank != 0) {
    if (output_error) return kExitUserError;
    return interrupted ? interrupted_exit_code() : kExitOk;
  }
  prof.stop();
  print_summary(rep);
  if (output_error) {
    std::fflush(stdout);
    return user_error(rank, output_error->message);
  }
  if (sweep) {
    *row = step_json(rep);
    if (!o.no_output) (*row)["h5"] = h5_path(o);
  } else if (!o.json_path.empty()) {
    prof.phase("output", "");
    if (const int rc = write_json(rank, o.json_path, step_json(rep)); rc != kExitOk) return rc;
  }
  std::fflush(stdout);
  prof.engine_detail("engine run", rep.r.engine);
  prof.print(stderr);
  if (interrupted) return interrupted_exit_code();
  return rep.r.complete ? kExitOk : kExitFailure;
}

namespace {

// The sweep's table as CSV (rank 0). Returns the exit code.
int write_csv(int rank, const std::string& path, const std::vector<nlohmann::json>& rows) {
  if (rank != 0) return kExitOk;
  if (auto ok = output::write_text_file("--csv", path, sweep_csv(rows)); !ok) {
    return user_error(rank, ok.error().message);
  }
  return kExitOk;
}

}  // namespace

int RunCommand::execute(int rank, int ranks) {
  auto variants = expand_sweep(opt_.sets, opt_.fidelity);
  if (!variants) return user_error(rank, variants.error().message);
  if (variants->size() == 1 && opt_.csv_path.empty()) {
    // A single run's default output carries its settings, as a sweep variant's does, so that a
    // run with other --set values never overwrites an earlier one (-o names it exactly).
    RunOptions o = opt_;
    const std::string name = settings_name(opt_.sets, opt_.fidelity);
    if (o.output.empty() && !name.empty()) {
      o.output = variant_path(std::filesystem::path(opt_.scenario).stem().string() + ".h5", name);
    }
    return execute_one(rank, ranks, o, nullptr);
  }
  // A sweep (or a one-row table): the table's files, then every variant loaded and checked
  // before the first is simulated.
  const std::string stem = std::filesystem::path(opt_.scenario).stem().string();
  const std::string json = opt_.json_path.empty() ? stem + "-sweep.json" : opt_.json_path;
  const std::string csv = opt_.csv_path.empty() ? stem + "-sweep.csv" : opt_.csv_path;
  if (auto ok = check_outputs_once({{"--json", json}, {"--csv", csv}}, {opt_.scenario}, rank);
      !ok) {
    return user_error(rank, ok.error().message);
  }
  std::vector<RunOptions> runs;
  for (const SweepVariant& v : *variants) {
    RunOptions o = opt_;
    o.sets = v.sets;
    o.fidelity.clear();
    o.json_path.clear();
    const auto named = [&v](const std::string& path) {
      return v.name.empty() || path.empty() ? path : variant_path(path, v.name);
    };
    o.output = named(opt_.output.empty() ? stem + ".h5" : opt_.output);
    o.trace = named(opt_.trace);
    if (auto run = load_run(o, ranks); !run) {
      return user_error(
          rank, "sweep variant " + (v.name.empty() ? stem : v.name) + ": " + run.error().message);
    }
    runs.push_back(std::move(o));
  }
  std::vector<nlohmann::json> rows;
  nlohmann::json table;
  table["command"] = "run";
  table["scenario"] = opt_.scenario;
  for (const auto& [key, value] : variants->front().varying) table["axes"].push_back(key);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SweepVariant& v = (*variants)[i];
    if (rank == 0 && !opt_.quiet) {
      std::fprintf(stderr, "stepsim: sweep variant %zu of %zu: %s\n", i + 1, runs.size(),
                   v.name.empty() ? stem.c_str() : v.name.c_str());
    }
    nlohmann::json row;
    const int rc = execute_one(rank, ranks, runs[i], &row);
    if (rank == 0 && !row.is_null()) {
      row["variant"] = nlohmann::json::object();
      for (const auto& [key, value] : v.varying) row["variant"][key] = value;
      rows.push_back(std::move(row));
      table["variants"] = rows;  // rewritten after each variant: a stop leaves the rows done
      if (const int w = write_json(rank, json, table); w != kExitOk) return w;
      if (const int w = write_csv(rank, csv, rows); w != kExitOk) return w;
    }
    if (rc != kExitOk && rc != kExitFailure) return rc;  // a user error or a stop
  }
  if (rank == 0 && !opt_.quiet) {
    std::fprintf(stderr, "stepsim: wrote %s and %s (%zu variants)\n", csv.c_str(), json.c_str(),
                 rows.size());
  }
  return kExitOk;
}

}  // namespace stepsim::cli
