#include "src/cli/memory_report.hpp"

#include <cstdio>

namespace stepsim::cli {
namespace {

constexpr double kGiB = 1 << 30;
constexpr std::size_t kSummaryTerms = 5;  // largest terms the summary lists

std::string label(const JobMemory& j) {
  return j.job.empty() ? "" : "job " + j.job + ", ";
}

}  // namespace

std::vector<JobMemory> scenario_memory(const workload::Scenario& s) {
  std::vector<JobMemory> m;
  if (s.jobs.empty()) {
    m.push_back({"", workload::estimate_memory(s)});
    return m;
  }
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    m.push_back({s.jobs[k].name, workload::estimate_memory(workload::job_scenario(s, k))});
  }
  return m;
}

bool memory_exceeded(const std::vector<JobMemory>& m) {
  for (const JobMemory& j : m) {
    if (!j.report.fits()) return true;
  }
  return false;
}

Result<bool> check_gpu_memory(const workload::Scenario& s, const std::vector<JobMemory>& m,
                              int rank) {
  for (const JobMemory& j : m) {
    if (j.report.fits()) continue;
    const std::string msg = workload::memory_error(j.report, j.job.empty() ? "" : "job " + j.job);
    if (s.memory.check != "warn") {
      return Error{msg + "; or --set memory.check=warn to simulate anyway"};
    }
    if (rank == 0) std::fprintf(stderr, "stepsim: warning: %s\n", msg.c_str());
  }
  return true;
}

void print_memory(const workload::Scenario& s, const std::vector<JobMemory>& m, bool stages) {
  for (const JobMemory& j : m) {
    const workload::MemoryReport& r = j.report;
    const workload::StageMemory& peak = r.stages[static_cast<std::size_t>(r.peak_stage)];
    std::printf("# memory per GPU (%sthe most-loaded GPU of each pipeline stage)\n",
                label(j).c_str());
    std::printf(
        "memory peak          %.2f GiB on stage %d of %.2f GiB (%s %s), headroom %.2f GiB%s\n",
        r.peak() / kGiB, r.peak_stage, r.capacity / kGiB, s.gpu.name.c_str(), "gpu.hbm_bytes",
        r.headroom() / kGiB, r.fits() ? "" : "  EXCEEDS CAPACITY");
    std::string terms;
    for (const workload::MemoryTerm& t : peak.largest(kSummaryTerms)) {
      if (t.bytes <= 0) break;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.2f", terms.empty() ? "" : ", ", t.name,
                    t.bytes / kGiB);
      terms += buf;
    }
    std::printf("largest terms        %s (GiB)\n", terms.c_str());
    if (!stages) continue;
    for (const workload::StageMemory& st : r.stages) {
      std::printf("  stage %-4d %8.2f GiB\n", st.stage, st.total() / kGiB);
    }
  }
}

nlohmann::json memory_json(const workload::Scenario& s, const std::vector<JobMemory>& m) {
  nlohmann::json j;
  j["check"] = s.memory.check;
  j["exceeded"] = memory_exceeded(m);
  j["capacity_bytes"] = static_cast<double>(s.gpu.hbm_bytes);
  for (const JobMemory& x : m) {
    nlohmann::json job;
    if (!x.job.empty()) job["job"] = x.job;
    job["peak_stage"] = x.report.peak_stage;
    job["peak_bytes"] = x.report.peak();
    job["headroom_bytes"] = x.report.headroom();
    job["fits"] = x.report.fits();
    for (const workload::StageMemory& st : x.report.stages) {
      nlohmann::json stage;
      stage["stage"] = st.stage;
      stage["total_bytes"] = st.total();
      for (const workload::MemoryTerm& t : st.terms) stage["terms"][t.name] = t.bytes;
      job["stages"].push_back(stage);
    }
    j["jobs"].push_back(job);
  }
  return j;
}

void add_memory_meta(const workload::Scenario& s, const std::vector<JobMemory>& m,
                     output::RunMeta& meta) {
  meta.memory_check = s.memory.check;
  meta.memory_exceeded = memory_exceeded(m);
  meta.memory_capacity = static_cast<double>(s.gpu.hbm_bytes);
  meta.memory_peak = 0;
  for (std::size_t k = 0; k < m.size(); ++k) {
    const workload::MemoryReport& r = m[k].report;
    if (r.peak() > meta.memory_peak) {
      meta.memory_peak = r.peak();
      meta.memory_peak_stage = static_cast<std::uint32_t>(r.peak_stage);
    }
    for (const workload::StageMemory& st : r.stages) {
      for (const workload::MemoryTerm& t : st.terms) {
        meta.memory.push_back(
            {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(st.stage), t.name, t.bytes});
      }
    }
  }
}

}  // namespace stepsim::cli
