// The step's result as plain rows for the output writers (step_output.hpp): codes and names of
// the schema's columns, each op's GPU, each flow's stage.
#include "stepsim/workload/step_output.hpp"

#include <algorithm>
#include <iterator>
#include <new>
#include <string>
#include <utility>

namespace stepsim::workload {
namespace {

static_assert(static_cast<std::size_t>(kCommGroups) == output::kGroups);
static_assert(static_cast<int>(OpKind::kForward) == static_cast<int>(output::OpCode::kForward));
static_assert(static_cast<int>(OpKind::kBackward) == static_cast<int>(output::OpCode::kBackward));
static_assert(static_cast<int>(OpKind::kOptimizer) == static_cast<int>(output::OpCode::kOptimizer));
static_assert(static_cast<int>(OpKind::kComm) == static_cast<int>(output::OpCode::kComm));
static_assert(static_cast<int>(OpKind::kWait) == static_cast<int>(output::OpCode::kWait));
static_assert(kOpKinds == 5);

std::array<double, output::kGroups> by_group(const double (&v)[kCommGroups]) {
  std::array<double, output::kGroups> out{};
  std::copy(std::begin(v), std::end(v), out.begin());
  return out;
}

output::StepFigures figures(const StepResult& r) {
  output::StepFigures f;
  f.status = step_status(r);
  f.complete = r.complete;
  f.step_s = r.step_s;
  f.mfu = r.mfu;
  f.model_flops = r.model_flops;
  f.peak_flops = r.peak_flops;
  f.critical_stage = r.critical_stage;
  f.compute_s = r.compute_s;
  f.bubble_s = r.bubble_s;
  f.optimizer_s = r.optimizer_s;
  f.exposed_s = by_group(r.exposed_s);
  f.events = r.events;
  f.digest = r.digest;
  f.messages = r.messages;
  f.retransmissions = r.retransmissions;
  f.cct_p50_us = r.cct_p50_us;
  f.cct_p99_us = r.cct_p99_us;
  f.cct_max_us = r.cct_max_us;
  f.fct_p50_us = r.fct_p50_us;
  f.fct_p99_us = r.fct_p99_us;
  f.fct_max_us = r.fct_max_us;
  f.folded_rails = r.folded_rails;
  f.flow_rows_total = r.flow_rows_total;
  f.flows_sample = r.flows_sample;
  return f;
}

// The whole step's traced GPUs, their ops and the collectives' GPUs (none otherwise).
void gpu_trace_rows(const StepResult& r, output::GpuTraceRows& out) {
  if (r.trace_gpus.empty()) return;
  out.ops.reserve(r.trace_ops.size());
  for (const OpRecord& o : r.trace_ops) {
    out.ops.push_back(output::OpsRow{o.start_s, o.end_s, o.gpu, o.stage, o.micro, o.chunk, o.layer,
                                     static_cast<std::uint16_t>(o.kind),
                                     static_cast<std::uint16_t>(o.group), o.job});
  }
  // A GPU's job and stage: its first op's (the ops come GPU by GPU).
  std::size_t k = 0;
  for (std::uint32_t g : r.trace_gpus) {
    while (k < r.trace_ops.size() && r.trace_ops[k].gpu < g) ++k;
    output::GpuTraceRows::Gpu row{g, 0, 0};
    if (k < r.trace_ops.size() && r.trace_ops[k].gpu == g) {
      row.job = r.trace_ops[k].job;
      row.stage = r.trace_ops[k].stage;
    }
    out.gpus.push_back(row);
  }
  out.coll_members.reserve(r.colls.size());
  for (const CollectiveRecord& c : r.colls) {
    out.coll_members.push_back(
        c.members < r.member_sets.size() ? c.members : output::GpuTraceRows::kNoMemberSet);
  }
  out.member_sets = r.member_sets;
}

// Op `o`'s row; `gpu_stride` as step_rows.
output::OpsRow ops_row(const StepResult& r, const OpRecord& o, std::uint32_t gpu_stride) {
  const std::uint32_t gpu =
      r.jobs.empty() ? o.stage * gpu_stride : r.jobs[o.job].stage_gpu[o.stage];
  return output::OpsRow{o.start_s,
                        o.end_s,
                        gpu,
                        o.stage,
                        o.micro,
                        o.chunk,
                        o.layer,
                        static_cast<std::uint16_t>(o.kind),
                        static_cast<std::uint16_t>(o.group),
                        o.job};
}

output::CollectivesRow colls_row(const CollectiveRecord& c) {
  return output::CollectivesRow{c.start_s,
                                c.end_s,
                                c.busbw_gbs,
                                c.bytes,
                                c.id,
                                c.stage,
                                c.gpus,
                                static_cast<std::uint16_t>(c.group),
                                static_cast<std::uint16_t>(c.kind),
                                c.job};
}

}  // namespace

const char* step_status(const StepResult& r) {
  if (r.complete) return "complete";
  if (r.interrupted) return "interrupted";
  if (r.failed_transfers > 0) return "failed_transfers";
  return "stopped_at_end";
}

output::StepRows step_rows(const StepResult& r, std::uint32_t gpu_stride, RowsHeld held) {
  output::StepRows out;
  out.figures = figures(r);
  for (int g = 0; g < kCommGroups; ++g) {
    out.group_names.emplace_back(comm_group_name(static_cast<CommGroup>(g)));
  }
  for (int k = 0; k < kOpKinds; ++k)
    out.op_names.emplace_back(op_kind_name(static_cast<OpKind>(k)));
  if (held == RowsHeld::kHeld) {
    out.ops.reserve(r.ops.size());
    for (const OpRecord& o : r.ops) out.ops.push_back(ops_row(r, o, gpu_stride));
    out.colls.reserve(r.colls.size());
    for (const CollectiveRecord& c : r.colls) out.colls.push_back(colls_row(c));
  } else {
    // Constructed in the writer's buffer (raw bytes: placement new).
    out.ops_fill.rows = r.ops.size();
    out.ops_fill.fill = [&r, gpu_stride](std::size_t first, std::size_t n, output::OpsRow* to) {
      for (std::size_t i = 0; i < n; ++i)
        new (to + i) output::OpsRow(ops_row(r, r.ops[first + i], gpu_stride));
    };
    out.colls_fill.rows = r.colls.size();
    out.colls_fill.fill = [&r](std::size_t first, std::size_t n, output::CollectivesRow* to) {
      for (std::size_t i = 0; i < n; ++i)
        new (to + i) output::CollectivesRow(colls_row(r.colls[first + i]));
    };
  }
  out.flows.reserve(r.flows.size());
  for (const FlowRow& f : r.flows) {
    const std::uint32_t stage = f.collective < r.colls.size() ? r.colls[f.collective].stage : 0;
    const collective::ConnectionFlow c{f.bytes,      f.messages, f.packets,       f.retransmitted,
                                       f.ecn_marked, f.start_ps, f.first_byte_ps, f.end_ps};
    out.flows.push_back(output::FlowsRow{c, f.collective, f.repeats, stage, f.src_nic, f.dst_nic,
                                         f.src_gpu, f.dst_gpu, static_cast<std::uint16_t>(f.group),
                                         static_cast<std::uint16_t>(f.kind), f.job});
  }
  out.links.reserve(r.links.size());
  for (const LinkRow& l : r.links) {
    out.links.push_back(output::LinksRow{l.bytes, l.packets, l.ecn_marks, l.pause_sent, l.drops,
                                         l.busy_s, l.paused_s, l.port, l.node, l.link, l.tier});
  }
  gpu_trace_rows(r, out.gpu_trace);
  for (const JobResult& j : r.jobs) {
    output::JobsRow x;
    x.name = j.name;
    x.gpus_text = j.gpus_text;
    x.gpus = j.gpus;
    x.stage_gpu = j.stage_gpu;
    x.step_s = j.step_s;
    x.mfu = j.mfu;
    x.model_flops = j.model_flops;
    x.tokens_per_step = j.tokens_per_step;
    x.compute_s = j.compute_s;
    x.bubble_s = j.bubble_s;
    x.optimizer_s = j.optimizer_s;
    x.exposed_s = by_group(j.exposed_s);
    x.critical_stage = j.critical_stage;
    out.jobs.push_back(std::move(x));
  }
  return out;
}

}  // namespace stepsim::workload
