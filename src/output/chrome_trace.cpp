#include "stepsim/output/chrome_trace.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "stepsim/collective/collective.hpp"
#include "stepsim/output/text_file.hpp"

namespace stepsim::output {
namespace {

using workload::OpKind;
constexpr int kComputeTid = 0;
constexpr int kWaitTid = 1;

// Metadata events: the name of a process or a thread.
nlohmann::json name_event(const char* what, std::uint32_t pid, int tid, const std::string& name) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

// The process of a job's stage: the jobs' stages in turn (one job: the stage).
std::uint32_t pid_of(const workload::StepResult& r, std::uint32_t job, std::uint32_t stage) {
  std::uint32_t base = 0;
  for (std::uint32_t k = 0; k < job && k < r.jobs.size(); ++k) {
    base += static_cast<std::uint32_t>(r.jobs[k].stage_gpu.size());
  }
  return base + stage;
}

nlohmann::json op_event(const workload::OpRecord& o, std::uint32_t pid) {
  std::string name = workload::op_kind_name(o.kind);
  nlohmann::json args = {{"micro", o.micro}, {"chunk", o.chunk}, {"layer", o.layer}};
  if (o.kind == OpKind::kComm) {
    name = std::string(workload::comm_group_name(o.group)) + " (blocking)";
    args["group"] = workload::comm_group_name(o.group);
  }
  if (o.kind == OpKind::kForward || o.kind == OpKind::kBackward) {
    name += " mb" + std::to_string(o.micro) + " L" + std::to_string(o.layer);
  }
  return {{"name", name},
          {"cat", workload::op_kind_name(o.kind)},
          {"ph", "X"},
          {"ts", o.start_s * 1e6},
          {"dur", (o.end_s - o.start_s) * 1e6},
          {"pid", pid},
          {"tid", o.kind == OpKind::kWait ? kWaitTid : kComputeTid},
          {"args", args}};
}

// A collective as a pair of async events on its group's track of the stage's process.
void collective_events(const workload::CollectiveRecord& c, std::uint32_t pid,
                       nlohmann::json& events) {
  const std::string group = workload::comm_group_name(c.group);
  const nlohmann::json args = {
      {"bytes", c.bytes}, {"group", group},           {"kind", collective::kind_name(c.kind)},
      {"gpus", c.gpus},   {"busbw_gbs", c.busbw_gbs}, {"id", c.id}};
  const std::string name = group + " " + collective::kind_name(c.kind);
  const std::string cat = group + " collectives";
  events.push_back({{"name", name},
                    {"cat", cat},
                    {"ph", "b"},
                    {"id", c.id},
                    {"ts", c.start_s * 1e6},
                    {"pid", pid},
                    {"tid", kComputeTid},
                    {"args", args}});
  events.push_back({{"name", name},
                    {"cat", cat},
                    {"ph", "e"},
                    {"id", c.id},
                    {"ts", c.end_s * 1e6},
                    {"pid", pid},
                    {"tid", kComputeTid}});
}

}  // namespace

Result<bool> write_chrome_trace(const std::string& path, const workload::StepResult& r,
                                std::uint32_t gpu_stride) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::pair<std::uint32_t, std::uint32_t>> stages;  // (job, stage)
  for (const workload::OpRecord& o : r.ops) stages.emplace(o.job, o.stage);
  for (const workload::CollectiveRecord& c : r.colls) stages.emplace(c.job, c.stage);
  for (const auto& [job, st] : stages) {
    const std::uint32_t pid = pid_of(r, job, st);
    const std::string name =
        r.jobs.empty()
            ? "stage " + std::to_string(st) + " (GPU " + std::to_string(st * gpu_stride) + ")"
            : "job " + r.jobs[job].name + ", stage " + std::to_string(st) + " (GPU " +
                  std::to_string(r.jobs[job].stage_gpu[st]) + ")";
    events.push_back(name_event("process_name", pid, -1, name));
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"sort_index", pid}}}});
    events.push_back(name_event("thread_name", pid, kComputeTid, "compute stream"));
    events.push_back(name_event("thread_name", pid, kWaitTid, "waiting for other stages"));
  }
  for (const workload::OpRecord& o : r.ops)
    events.push_back(op_event(o, pid_of(r, o.job, o.stage)));
  for (const workload::CollectiveRecord& c : r.colls) {
    if (c.start_s < 0 || c.end_s < c.start_s) continue;  // did not finish (an interrupted step)
    collective_events(c, pid_of(r, c.job, c.stage), events);
  }
  nlohmann::json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  return write_text_file("--trace", path, j.dump() + "\n");
}

}  // namespace stepsim::output
