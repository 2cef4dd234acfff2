#include "stepsim/output/chrome_trace.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "stepsim/collective/collective.hpp"

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

nlohmann::json op_event(const workload::OpRecord& o) {
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
          {"pid", o.stage},
          {"tid", o.kind == OpKind::kWait ? kWaitTid : kComputeTid},
          {"args", args}};
}

// A collective as a pair of async events on its group's track of the stage's process.
void collective_events(const workload::CollectiveRecord& c, nlohmann::json& events) {
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
                    {"pid", c.stage},
                    {"tid", kComputeTid},
                    {"args", args}});
  events.push_back({{"name", name},
                    {"cat", cat},
                    {"ph", "e"},
                    {"id", c.id},
                    {"ts", c.end_s * 1e6},
                    {"pid", c.stage},
                    {"tid", kComputeTid}});
}

}  // namespace

Result<bool> write_chrome_trace(const std::string& path, const workload::StepResult& r,
                                std::uint32_t gpu_stride) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::uint32_t> stages;
  for (const workload::OpRecord& o : r.ops) stages.insert(o.stage);
  for (const workload::CollectiveRecord& c : r.colls) stages.insert(c.stage);
  for (std::uint32_t st : stages) {
    events.push_back(name_event(
        "process_name", st, -1,
        "stage " + std::to_string(st) + " (GPU " + std::to_string(st * gpu_stride) + ")"));
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", st}, {"args", {{"sort_index", st}}}});
    events.push_back(name_event("thread_name", st, kComputeTid, "compute stream"));
    events.push_back(name_event("thread_name", st, kWaitTid, "waiting for other stages"));
  }
  for (const workload::OpRecord& o : r.ops) events.push_back(op_event(o));
  for (const workload::CollectiveRecord& c : r.colls) collective_events(c, events);
  nlohmann::json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  std::ofstream out(path);
  if (!out) return Error{"--trace: cannot write '" + path + "'"};
  out << j.dump() << "\n";
  if (!out) return Error{"--trace: cannot write '" + path + "'"};
  return true;
}

}  // namespace stepsim::output
