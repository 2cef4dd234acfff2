#include "src/cli/run_summary.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "src/cli/memory_report.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "src/workload/moe/routing.hpp"
#include "stepsim/version.hpp"
#include "stepsim/workload/step_output.hpp"

namespace stepsim::cli {

using workload::CommGroup;

// A whole step run with step.fold none that could fold `rails` rails: what to do about it (the
// summary's `hint` line and the progress line before the run).
std::string fold_hint(std::uint32_t rails) {
  return "--set step.fold=rails would run 1 of these " + std::to_string(rails) +
         " rails (the job is rail-symmetric: " + std::to_string(rails) +
         "x fewer events; docs/workload.md, Rail folding)";
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

// "TP 8, PP 8 x 1, CP 1, EP 1, DP 16".
std::string parallel_text(const workload::Parallelism& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "TP %d, PP %d x %d, CP %d, EP %d, DP %d", p.tp, p.pp, p.vpp, p.cp,
                p.ep, p.data_parallel());
  return buf;
}

namespace {

const char* group_name(int g) {
  return workload::comm_group_name(static_cast<CommGroup>(g));
}

// The heading: the scenario, or each job of a multi-job one.
void print_heading(const StepReport& rep) {
  const workload::Scenario& s = rep.run.scenario;
  if (s.jobs.empty()) {
    std::printf("# stepsim run %s: %s on %s, %d GPUs %s (%s), fidelity %s, step %s, ranks %d\n",
                rep.opt.scenario.c_str(), s.model.name.c_str(), rep.run.topo.name.c_str(),
                s.par.world(), s.gpu.name.c_str(), parallel_text(s.par).c_str(), s.fidelity.c_str(),
                workload::resolved_step_mode(s), rep.ranks);
    return;
  }
  std::size_t gpus = 0;
  for (const workload::JobSpec& j : s.jobs) gpus += j.gpus.size();
  std::printf("# stepsim run %s: %zu jobs on %s, %zu GPUs %s, fidelity %s, step %s, ranks %d\n",
              rep.opt.scenario.c_str(), s.jobs.size(), rep.run.topo.name.c_str(), gpus,
              s.gpu.name.c_str(), s.fidelity.c_str(), workload::resolved_step_mode(s), rep.ranks);
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

// moe.routing other than balanced: the busiest EP rank's share and the tokens dropped.
void print_routing(const workload::Scenario& s) {
  if (s.model.experts == 0 || s.moe.routing == "balanced") return;
  const workload::MoeLoad l = workload::moe_load(s);
  std::printf("moe routing          %s: busiest EP rank %.2f%% of the tokens (even %.2f%%), %s\n",
              s.moe.routing.c_str(), 100 * l.busiest_share, 100.0 / std::max(s.par.ep, 1),
              s.moe.dropless ? "dropless"
                             : ("capacity " + std::to_string(s.model.capacity_factor).substr(0, 4) +
                                ", dropped " + std::to_string(100 * l.dropped).substr(0, 5) + "%")
                                   .c_str());
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
      s.fidelity == "cell" ? " in " + to_string(s.fabric.cell_size) + " cells" : std::string();
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
  if (r.background_cut_s >= 0) {
    std::printf("background           stopped at the step's end, %s (its UNTIL lay past it)\n",
                sim_text(r.background_cut_s).c_str());
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

// The resolved parallel layout.
nlohmann::json parallel_json(const workload::Parallelism& p) {
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"dp", p.data_parallel()},
          {"gpus", p.world()},
          {"micro_batch", p.micro_batch},
          {"global_batch", p.global_batch},
          {"micro_batches", p.micro_batches()},
          {"zero", p.zero},
          {"recompute", p.recompute},
          {"sequence_parallel", p.sequence_parallel},
          {"tp_overlap", p.tp_overlap}};
}

}  // namespace

void print_summary(const StepReport& rep) {
  print_headline(rep);
  print_memory(rep.run.scenario, rep.memory, false);
  print_time_went(rep.r);
  print_routing(rep.run.scenario);
  print_collectives(rep.r);
  print_fabric(rep);
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
  j["topology_file"] = s.topology;
  j["sets"] = rep.run.sets;
  if (s.jobs.empty()) j["parallel"] = parallel_json(s.par);
  j["gpus"] = run_gpus(s);
  j["gpu"] = s.gpu.name;
  j["fidelity"] = s.fidelity;
  j["cell_bytes"] = s.fidelity == "cell" ? s.fabric.cell_size.count() : 0;
  j["step_mode"] = workload::resolved_step_mode(s);
  j["folded_rails"] = r.folded_rails;
  j["foldable_rails"] = r.foldable_rails;
  if (r.background_cut_s >= 0) j["background_cut_s"] = r.background_cut_s;
  j["complete"] = r.complete;
  j["status"] = workload::step_status(r);
  j["step_s"] = r.step_s;
  j["mfu"] = r.complete ? nlohmann::json(r.mfu) : nlohmann::json(nullptr);
  j["tokens_per_s_per_gpu"] =
      r.complete && r.step_s > 0
          ? nlohmann::json(run_tokens(s) / r.step_s / static_cast<double>(run_gpus(s)))
          : nlohmann::json(nullptr);
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
  j["memory"] = memory_json(rep.run.scenario, rep.memory);
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

}  // namespace stepsim::cli
