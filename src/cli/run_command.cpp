#include "src/cli/run_command.hpp"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "stepsim/output/step_h5.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/version.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::cli {

RunCommand::RunCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "run", "One training step of a scenario (workloads/*.yaml): step time, MFU, breakdown");
  cmd_->add_option("scenario", scenario_, "Scenario file (workloads/*.yaml)")->required();
  cmd_->add_option("--set", sets_, "Override a scenario key: key=value (repeatable)");
  cmd_->add_option("--fidelity", fidelity_,
                   "packet (every collective at packet level), cell (the same fabric in cells of "
                   "fabric.cell bytes, 64 KiB by default), ideal (NCCL's cost model) or "
                   "analytical (alpha-beta lower bound)");
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")->capture_default_str();
  cmd_->add_option("--partition", partition_,
                   "Partitioner of LPs onto ranks: metis (weighted by each collective's traffic) "
                   "or block")
      ->capture_default_str();
  cmd_->add_option("--json", json_path_, "Write the summary as JSON to this file");
  cmd_->add_option("-o,--output", output_,
                   "HDF5 file of the step (docs/hdf5-schema.md); default: SCENARIO stem + .h5");
  cmd_->add_flag("--no-output", no_output_, "Do not write the HDF5 file");
  cmd_->add_option("--trace", trace_,
                   "Write the op timeline as a Chrome/Perfetto trace (JSON) to this file");
  cmd_->add_flag("--quiet", quiet_, "No progress output");
}

namespace {

std::string seconds_text(double s) {
  char buf[64];
  if (s >= 1) {
    std::snprintf(buf, sizeof buf, "%.4f s", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  }
  return buf;
}

// The op timeline as Chrome trace events (chrome://tracing, ui.perfetto.dev): one process per
// stage, thread 0 the compute stream (forward, backward, optimizer, blocking collectives) and
// thread 1 the waits for other stages.
int write_trace(int rank, const std::string& path, const workload::StepResult& r) {
  if (rank != 0) return kExitOk;
  static const char* const kKinds[] = {"forward", "backward", "optimizer", "comm", "wait"};
  nlohmann::json events = nlohmann::json::array();
  for (const workload::OpRecord& o : r.ops) {
    std::string name = kKinds[o.kind];
    if (o.kind == 3) {
      name = workload::comm_group_name(static_cast<workload::CommGroup>(o.group));
    }
    if (o.kind <= 1) name += " mb" + std::to_string(o.micro) + " L" + std::to_string(o.layer);
    events.push_back({{"name", name},
                      {"cat", kKinds[o.kind]},
                      {"ph", "X"},
                      {"ts", o.start_s * 1e6},
                      {"dur", (o.end_s - o.start_s) * 1e6},
                      {"pid", o.stage},
                      {"tid", o.kind == 4 ? 1 : 0}});
  }
  nlohmann::json j;
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ms";
  std::ofstream out(path);
  if (!out) return user_error(rank, "--trace: cannot write '" + path + "'");
  out << j.dump() << "\n";
  return kExitOk;
}

}  // namespace

int RunCommand::execute(int rank, int ranks) {
  std::vector<std::string> sets = sets_;
  if (!fidelity_.empty()) sets.push_back("fidelity=" + fidelity_);
  auto sc = workload::load_scenario(scenario_, sets);
  if (!sc) return user_error(rank, sc.error().message);
  const workload::Scenario& s = *sc;
  auto topo = topology::load_topology(s.topology);
  if (!topo) return user_error(rank, "topology: " + topo.error().message);
  if (auto ok = workload::validate(s, *topo); !ok) return user_error(rank, ok.error().message);
  {  // Every output is checked before the step is simulated, not found unwritable after it.
    std::vector<OutputFile> outputs;
    const std::string h5 =
        cmd_->count("-o") > 0 ? output_ : std::filesystem::path(scenario_).stem().string() + ".h5";
    if (!no_output_) add_output(outputs, *cmd_, "-o", h5);
    add_output(outputs, *cmd_, "--json", json_path_);
    add_output(outputs, *cmd_, "--trace", trace_);
    if (auto ok = check_outputs_once(outputs, {scenario_, s.topology}, rank); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  if (s.fidelity == "packet" || s.fidelity == "cell") {
    if (auto ok = check_fabric_memory(*topo, ranks); !ok) {
      return user_error(rank, ok.error().message);
    }
  }

  pdes::MpiSync sync;
  // The ideal model first: fast, and the yardstick for the progress display's ETA.
  auto ideal_comm = workload::make_ideal_comm(*topo, s);
  auto ideal = workload::run_step(s, *topo, *ideal_comm);
  if (!ideal) return user_error(rank, ideal.error().message);
  if (auto p = pdes::make_partitioner(partition_); !p) {
    return user_error(rank, "--partition: " + p.error().message);
  }
  pdes::EngineOptions opts = bench_engine_options(threads_, s.end, false, rank);
  opts.partitioner = partition_;
  const bool show = !quiet_ && rank == 0;
  double last_wall = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t ops = 0;
  // Progress: pipeline ops done (forward or backward of a model chunk on a stage) of all.
  const std::uint64_t total_ops = 2ULL * static_cast<std::uint64_t>(s.par.pp) *
                                  static_cast<std::uint64_t>(s.par.vpp) *
                                  static_cast<std::uint64_t>(s.par.micro_batches());
  double sim_max = 0;
  auto progress = [&](double sim) {
    ++ops;
    sim_max = std::max(sim_max, sim);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (show && wall - last_wall >= progress_interval()) {
      last_wall = wall;
      print_step_progress(ops, total_ops, sim_max, wall);
    }
    // Between collectives an ideal run may stop at once; a packet run stops inside the engine,
    // where every rank agrees on it.
    return !(s.fidelity == "ideal" && pdes::Engine::stop_requested());
  };
  Result<workload::StepResult> res = ideal;
  std::unique_ptr<workload::CommModel> packet;
  if (s.fidelity == "packet" || s.fidelity == "cell") {
    packet = workload::make_packet_comm(*topo, s, sync, opts);
    res = workload::run_step(s, *topo, *packet, progress);
  } else if (s.fidelity == "analytical") {
    auto analytical = workload::make_analytical_comm(*topo, s);
    res = workload::run_step(s, *topo, *analytical, progress);
  } else {
    res = workload::run_step(s, *topo, *ideal_comm, progress);
  }
  if (show) finish_progress();
  if (!res) return user_error(rank, res.error().message);
  const bool interrupted = res->interrupted;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const workload::Parallelism& p = s.par;
  if (!no_output_) {
    std::string path = output_;
    if (path.empty()) path = std::filesystem::path(scenario_).stem().string() + ".h5";
    output::RunMeta meta;
    meta.scenario_path = scenario_;
    std::ifstream in(scenario_);
    meta.scenario_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    for (const std::string& kv : sets) meta.sets += kv + "\n";
    meta.fidelity = s.fidelity;
    meta.cell_bytes = s.fidelity == "cell" ? s.cell.count() : 0;
    meta.model = s.model.name;
    meta.topology = topo->name;
    meta.gpu = s.gpu.name;
    meta.gpus = p.world();
    meta.ranks = ranks;
    meta.threads = threads_;
    meta.gpu_stride = static_cast<std::uint32_t>(p.tp * p.cp * p.data_parallel());
    meta.wall_s = wall;
    if (auto ok = output::write_step_h5(path, meta, *res, MPI_COMM_WORLD); !ok) {
      return user_error(rank, ok.error().message);
    }
    if (rank == 0 && !quiet_) std::fprintf(stderr, "stepsim: wrote %s\n", path.c_str());
  }
  if (!trace_.empty()) {
    if (const int rc = write_trace(rank, trace_, *res); rc != kExitOk) return rc;
  }
  if (rank != 0) return interrupted ? interrupted_exit_code() : kExitOk;
  std::printf(
      "# stepsim run %s: %s on %s, %d GPUs %s (TP %d, PP %d x %d, CP %d, EP %d, DP %d), "
      "fidelity %s, ranks %d\n",
      scenario_.c_str(), s.model.name.c_str(), topo->name.c_str(), p.world(), s.gpu.name.c_str(),
      p.tp, p.pp, p.vpp, p.cp, p.ep, p.data_parallel(), s.fidelity.c_str(), ranks);
  const workload::StepResult& r = *res;
  if (interrupted) {
    std::printf(
        "# status: INTERRUPTED (the numbers below cover what was done; the HDF5 file "
        "says complete = 0)\n");
  } else if (!r.complete) {
    std::printf("# status: INCOMPLETE (stopped at end = %s)\n", to_string(s.end).c_str());
  }
  std::printf("step time            %s\n", seconds_text(r.step_s).c_str());
  if (r.complete) {
    std::printf("MFU                  %.2f %%  (%.4g model FLOP per step, %s peak %.4g FLOP/s)\n",
                r.mfu * 100, r.model_flops, s.model.precision.c_str(), r.peak_flops);
  } else {  // the whole step's FLOPs over part of its time would overstate it
    std::printf("MFU                  n/a (the step did not complete)\n");
  }
  std::printf("tokens per second    %.4g per GPU\n",
              static_cast<double>(p.global_batch) * s.model.seq_len / r.step_s / p.world());
  std::printf("# where the time went (stage %u, the last to finish)\n", r.critical_stage);
  std::printf("compute              %s\n", seconds_text(r.compute_s).c_str());
  for (int g = 0; g < workload::kCommGroups; ++g) {
    // Pipeline sends never block the compute stream: their time is in the bubble.
    if (r.collectives[g] == 0 || g == static_cast<int>(workload::CommGroup::kPp)) continue;
    std::printf("exposed %-12s %s\n",
                workload::comm_group_name(static_cast<workload::CommGroup>(g)),
                seconds_text(r.exposed_s[g]).c_str());
  }
  std::printf("pipeline bubble      %s  (waiting for other stages and pipeline sends)\n",
              seconds_text(r.bubble_s).c_str());
  std::printf("optimizer            %s\n", seconds_text(r.optimizer_s).c_str());
  std::printf("# collectives (all stages)\n");
  for (int g = 0; g < workload::kCommGroups; ++g) {
    if (r.collectives[g] == 0) continue;
    std::printf("busbw %-14s %.2f GB/s  (%" PRIu64 " collectives, %.4g bytes)\n",
                workload::comm_group_name(static_cast<workload::CommGroup>(g)), r.busbw_gbs[g],
                r.collectives[g], r.comm_bytes[g]);
  }
  std::printf("collective time      p50 %.2f us, p99 %.2f us, max %.2f us (network groups)\n",
              r.cct_p50_us, r.cct_p99_us, r.cct_max_us);
  if (r.messages > 0) {
    std::printf("message FCT          p50 %.2f us, p99 %.2f us, max %.2f us (%" PRIu64
                " RDMA messages, 9%% bins)\n",
                r.fct_p50_us, r.fct_p99_us, r.fct_max_us, r.messages);
  }
  const std::string cells =
      s.fidelity == "cell" ? " in " + to_string(s.cell) + " cells" : std::string();
  std::printf("# fabric (%s fidelity%s: %" PRIu64 " distinct collectives simulated)\n",
              s.fidelity.c_str(), cells.c_str(), r.distinct_collectives);
  std::printf("drops                %" PRIu64 "\n", r.drops);
  std::printf("retransmissions      %" PRIu64 "\n", r.retransmissions);
  std::printf("PFC pause time       %s (summed over ports)\n", seconds_text(r.paused_s).c_str());
  std::printf("# engine: %" PRIu64 " events, wall %.2f s\n", r.events, wall);
  if (r.events > 0) {
    print_partition("partition " + partition_ + " over " + std::to_string(ranks) + " ranks",
                    r.engine);
  }
  std::printf("digest           %s\n", digest_hex(r.digest).c_str());
  if (!json_path_.empty()) {
    nlohmann::json j;
    j["command"] = "run";
    j["version"] = kVersion;
    j["scenario"] = scenario_;
    j["model"] = s.model.name;
    j["topology"] = topo->name;
    j["gpus"] = p.world();
    j["gpu"] = s.gpu.name;
    j["fidelity"] = s.fidelity;
    j["cell_bytes"] = s.fidelity == "cell" ? s.cell.count() : 0;
    j["complete"] = r.complete;
    j["step_s"] = r.step_s;
    j["mfu"] = r.complete ? nlohmann::json(r.mfu) : nlohmann::json(nullptr);
    j["model_flops"] = r.model_flops;
    j["compute_s"] = r.compute_s;
    j["bubble_s"] = r.bubble_s;
    j["optimizer_s"] = r.optimizer_s;
    for (int g = 0; g < workload::kCommGroups; ++g) {
      const std::string n = workload::comm_group_name(static_cast<workload::CommGroup>(g));
      j["exposed_s"][n] = r.exposed_s[g];
      j["busbw_gbs"][n] = r.busbw_gbs[g];
      j["collectives"][n] = r.collectives[g];
    }
    j["collective_time_us"] = {{"p50", r.cct_p50_us}, {"p99", r.cct_p99_us}, {"max", r.cct_max_us}};
    j["message_fct_us"] = {
        {"p50", r.fct_p50_us}, {"p99", r.fct_p99_us}, {"max", r.fct_max_us}, {"count", r.messages}};
    j["drops"] = r.drops;
    j["retransmissions"] = r.retransmissions;
    j["pfc_paused_s"] = r.paused_s;
    j["events"] = r.events;
    j["engine"] = engine_json(partition_, ranks, r.engine);
    j["wall_s"] = wall;
    j["digest"] = digest_hex(r.digest);
    if (const int rc = write_json(rank, json_path_, j); rc != kExitOk) return rc;
  }
  if (interrupted) return interrupted_exit_code();
  return r.complete ? kExitOk : kExitFailure;
}

}  // namespace stepsim::cli
