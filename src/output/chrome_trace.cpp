#include "stepsim/output/chrome_trace.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "stepsim/collective/collective.hpp"
#include "stepsim/output/text_file.hpp"

namespace stepsim::output {
namespace {

constexpr int kComputeTid = 0;
constexpr int kWaitTid = 1;

// Metadata events: the name of a process or a thread.
nlohmann::json name_event(const char* what, std::uint32_t pid, int tid, const std::string& name) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

// The process of a job's stage: the jobs' stages in turn (one job: the stage).
std::uint32_t pid_of(const StepRows& r, std::uint32_t job, std::uint32_t stage) {
  std::uint32_t base = 0;
  for (std::uint32_t k = 0; k < job && k < r.jobs.size(); ++k) {
    base += static_cast<std::uint32_t>(r.jobs[k].stage_gpu.size());
  }
  return base + stage;
}

nlohmann::json op_event(const StepRows& r, const OpsRow& o, std::uint32_t pid) {
  const auto kind = static_cast<OpCode>(o.kind);
  const std::string& kind_name = r.op_names.at(o.kind);
  std::string name = kind_name;
  nlohmann::json args = {{"micro", o.micro}, {"chunk", o.chunk}, {"layer", o.layer}};
  if (kind == OpCode::kComm) {
    name = r.group_names.at(o.group) + " (blocking)";
    args["group"] = r.group_names.at(o.group);
  }
  if (kind == OpCode::kForward || kind == OpCode::kBackward) {
    name += " mb" + std::to_string(o.micro) + " L" + std::to_string(o.layer);
  }
  return {{"name", name},
          {"cat", kind_name},
          {"ph", "X"},
          {"ts", o.start_s * 1e6},
          {"dur", (o.end_s - o.start_s) * 1e6},
          {"pid", pid},
          {"tid", kind == OpCode::kWait ? kWaitTid : kComputeTid},
          {"args", args}};
}

// A collective as a pair of async events on its group's track of the stage's process.
void collective_events(const StepRows& r, const CollectivesRow& c, std::uint32_t pid,
                       nlohmann::json& events) {
  const std::string& group = r.group_names.at(c.group);
  const std::string kind = collective::kind_name(static_cast<collective::Kind>(c.kind));
  const nlohmann::json args = {{"bytes", c.bytes}, {"group", group},           {"kind", kind},
                               {"gpus", c.gpus},   {"busbw_gbs", c.busbw_gbs}, {"id", c.id}};
  const std::string name = group + " " + kind;
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

Result<bool> write_chrome_trace(const std::string& path, const StepRows& r,
                                std::uint32_t gpu_stride) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::pair<std::uint32_t, std::uint32_t>> stages;  // (job, stage)
  for (const OpsRow& o : r.ops) stages.emplace(o.job, o.stage);
  for (const CollectivesRow& c : r.colls) stages.emplace(c.job, c.stage);
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
  for (const OpsRow& o : r.ops) events.push_back(op_event(r, o, pid_of(r, o.job, o.stage)));
  for (const CollectivesRow& c : r.colls) {
    if (c.start_s < 0 || c.end_s < c.start_s) continue;  // did not finish (an interrupted step)
    collective_events(r, c, pid_of(r, c.job, c.stage), events);
  }
  nlohmann::json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  return write_text_file("--trace", path, j.dump() + "\n");
}

}  // namespace stepsim::output
