#include "stepsim/output/chrome_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

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

// The process of a job's stage in the memoized step: the jobs' stages in turn (one job: the
// stage).
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

// A collective as a pair of async events on its group's track of a process. `id` is unique in
// the trace (a collective on several traced GPUs is one pair on each).
void collective_events(const StepRows& r, const CollectivesRow& c, std::uint32_t pid,
                       std::uint64_t id, std::string& out) {
  const std::string& group = r.group_names.at(c.group);
  const std::string kind = collective::kind_name(static_cast<collective::Kind>(c.kind));
  const nlohmann::json args = {{"bytes", c.bytes}, {"group", group},           {"kind", kind},
                               {"gpus", c.gpus},   {"busbw_gbs", c.busbw_gbs}, {"id", c.id}};
  const std::string name = group + " " + kind;
  const std::string cat = group + " collectives";
  const nlohmann::json b = {
      {"name", name},          {"cat", cat}, {"ph", "b"},          {"id", id},
      {"ts", c.start_s * 1e6}, {"pid", pid}, {"tid", kComputeTid}, {"args", args}};
  const nlohmann::json e = {{"name", name},        {"cat", cat}, {"ph", "e"},         {"id", id},
                            {"ts", c.end_s * 1e6}, {"pid", pid}, {"tid", kComputeTid}};
  out += b.dump();
  out += ',';
  out += e.dump();
}

// A process of the trace.
struct TraceProcess {
  std::uint32_t pid = 0;
  std::string name;
};

// One op (1 event) or one collective on one process (2 events), placed by its start.
struct TraceUnit {
  double ts = 0;
  std::uint32_t pid = 0;
  std::uint8_t collective = 0;
  std::uint32_t row = 0;  // into the ops rows or StepRows::colls
  [[nodiscard]] std::uint64_t events() const { return collective != 0 ? 2 : 1; }
};

bool trace_finished(const CollectivesRow& c) {
  return c.start_s >= 0 && c.end_s >= c.start_s;  // not: an interrupted step's unfinished one
}

// The memoized step: a process per stage, its ops and collectives.
void memoized_units(const StepRows& r, std::uint32_t gpu_stride, std::vector<TraceProcess>& procs,
                    std::vector<TraceUnit>& units) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> stages;  // (job, stage)
  for (const OpsRow& o : r.ops) stages.emplace(o.job, o.stage);
  for (const CollectivesRow& c : r.colls) stages.emplace(c.job, c.stage);
  for (const auto& [job, st] : stages) {
    const std::string name =
        r.jobs.empty()
            ? "stage " + std::to_string(st) + " (GPU " + std::to_string(st * gpu_stride) + ")"
            : "job " + r.jobs[job].name + ", stage " + std::to_string(st) + " (GPU " +
                  std::to_string(r.jobs[job].stage_gpu[st]) + ")";
    procs.push_back({pid_of(r, job, st), name});
  }
  for (std::uint32_t i = 0; i < r.ops.size(); ++i) {
    const OpsRow& o = r.ops[i];
    units.push_back({o.start_s, pid_of(r, o.job, o.stage), 0, i});
  }
  for (std::uint32_t i = 0; i < r.colls.size(); ++i) {
    const CollectivesRow& c = r.colls[i];
    if (trace_finished(c)) units.push_back({c.start_s, pid_of(r, c.job, c.stage), 1, i});
  }
}

// The whole step: a process per traced GPU (its number the pid), its ops and the collectives
// whose GPUs include it.
void gpu_units(const StepRows& r, std::vector<TraceProcess>& procs, std::vector<TraceUnit>& units) {
  const GpuTraceRows& t = r.gpu_trace;
  std::vector<std::uint32_t> traced;  // ascending
  for (const GpuTraceRows::Gpu& g : t.gpus) {
    traced.push_back(g.gpu);
    const std::string job = r.jobs.empty() || g.job >= r.jobs.size()
                                ? std::string()
                                : "job " + r.jobs[g.job].name + ", ";
    procs.push_back({g.gpu, "GPU " + std::to_string(g.gpu) + " (" + job + "stage " +
                                std::to_string(g.stage) + ")"});
  }
  for (std::uint32_t i = 0; i < t.ops.size(); ++i)
    units.push_back({t.ops[i].start_s, t.ops[i].gpu, 0, i});
  // Each member set's traced GPUs, once.
  std::vector<std::vector<std::uint32_t>> in_set(t.member_sets.size());
  for (std::size_t m = 0; m < t.member_sets.size(); ++m) {
    for (std::uint32_t g : t.member_sets[m]) {
      if (std::binary_search(traced.begin(), traced.end(), g)) in_set[m].push_back(g);
    }
    std::sort(in_set[m].begin(), in_set[m].end());
    in_set[m].erase(std::unique(in_set[m].begin(), in_set[m].end()), in_set[m].end());
  }
  for (std::uint32_t i = 0; i < r.colls.size() && i < t.coll_members.size(); ++i) {
    const std::uint32_t m = t.coll_members[i];
    if (m >= in_set.size() || !trace_finished(r.colls[i])) continue;
    for (std::uint32_t g : in_set[m]) units.push_back({r.colls[i].start_s, g, 1, i});
  }
}

std::string ms_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

}  // namespace

Result<TraceWritten> write_chrome_trace(const std::string& path, const StepRows& r,
                                        const TraceOptions& opt) {
  const bool by_gpu = !r.gpu_trace.gpus.empty();
  std::vector<TraceProcess> procs;
  std::vector<TraceUnit> units;
  if (by_gpu) {
    gpu_units(r, procs, units);
  } else {
    memoized_units(r, opt.gpu_stride, procs, units);
  }
  // The earliest first (ties in a fixed order), up to the cap.
  std::sort(units.begin(), units.end(), [](const TraceUnit& a, const TraceUnit& b) {
    return std::tie(a.ts, a.pid, a.collective, a.row) < std::tie(b.ts, b.pid, b.collective, b.row);
  });
  TraceWritten w;
  std::size_t kept = 0;
  while (kept < units.size() && w.events + units[kept].events() <= opt.max_events) {
    w.events += units[kept++].events();
  }
  for (std::size_t i = kept; i < units.size(); ++i) w.left_out += units[i].events();
  if (kept < units.size()) {
    w.cut_s = units[kept].ts;
    w.note = "the trace stops at " + ms_text(w.cut_s) + " of the " + ms_text(r.figures.step_s) +
             " step: it holds --trace-max-events " + std::to_string(opt.max_events) + " events, " +
             std::to_string(w.left_out) +
             " later ones are left out (raise --trace-max-events or trace fewer GPUs with "
             "--trace-gpus)";
  }
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  const auto add = [&out, &first](const nlohmann::json& e) {
    if (!first) out += ',';
    first = false;
    out += e.dump();
  };
  for (std::size_t k = 0; k < procs.size(); ++k) {
    const std::uint32_t pid = procs[k].pid;
    add(name_event("process_name", pid, -1, procs[k].name));
    add({{"name", "process_sort_index"},
         {"ph", "M"},
         {"pid", pid},
         {"args", {{"sort_index", by_gpu ? k : pid}}}});
    add(name_event("thread_name", pid, kComputeTid, "compute stream"));
    add(name_event("thread_name", pid, kWaitTid, "waiting for other stages"));
  }
  const std::vector<OpsRow>& ops = by_gpu ? r.gpu_trace.ops : r.ops;
  for (std::size_t i = 0; i < kept; ++i) {
    const TraceUnit& u = units[i];
    if (u.collective == 0) {
      add(op_event(r, ops[u.row], u.pid));
      continue;
    }
    if (!first) out += ',';
    first = false;
    const CollectivesRow& c = r.colls[u.row];
    // The whole step: unique per (GPU, collective); below 2^53, exact as a JSON number.
    const std::uint64_t id = by_gpu ? (static_cast<std::uint64_t>(u.pid) << 32) | c.id : c.id;
    collective_events(r, c, u.pid, id, out);
  }
  nlohmann::json other = nlohmann::json::object();
  if (!w.note.empty()) {
    add({{"name", "trace cut (--trace-max-events)"},
         {"ph", "i"},
         {"s", "g"},
         {"ts", w.cut_s * 1e6},
         {"pid", procs.empty() ? 0 : procs.front().pid},
         {"tid", kComputeTid},
         {"args", {{"note", w.note}}}});
    other["note"] = w.note;
  }
  out += "]";
  if (!other.empty()) out += ",\"otherData\":" + other.dump();
  out += "}\n";
  if (auto ok = write_text_file("--trace", path, out); !ok) return ok.error();
  return w;
}

}  // namespace stepsim::output
