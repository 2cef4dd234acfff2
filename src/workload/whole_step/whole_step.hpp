#pragma once
// The whole-step executor (issue 14): every GPU of the job runs its stage's program
// (stage_program.hpp) on the PDES, in one RDMA run over the whole fabric, so the collectives of
// all stages and groups meet on the NICs, NVLink and switches as their dependencies release
// them. How it runs:
// - A collective instance is (communicator, sequence number): every member runs the same ops on
//   a communicator in the same order, so it numbers them alike. Its part on a server starts when
//   that server's members have all reached it (after the protocol's base latency), as NCCL's
//   kernels start on each GPU; data that arrives earlier waits in the receive buffer (deferred
//   completions), as in NCCL's FIFO. A member's stream goes on when its part is done.
// - Collectives whose GPUs all sit in one server (TP, and CP/EP/PP inside a server) are folded:
//   they take their memoized packet-level time, from when the last member arrives or when the
//   members' NVLink egress is free (it is shared with the network collectives' NVLink hops),
//   and occupy each member's NVLink for their bytes. They never touch a NIC.
// - Every other collective runs its algorithm (ring, tree, pairwise, ...) at packet or cell
//   level. RC connections belong to the communicator (as NCCL's) and are reused by its
//   collectives; the immediate data and work-request id carry the sequence number.
// - step.fold rails: on a rail-optimized fabric a job whose network collectives each stay on one
//   rail runs rail 0's GPUs only; the others copy the clocks of their server's rail-0 GPU and
//   their collectives the records of the rail-0 copy (docs/workload.md, "Rail folding").
// - SHARP (switch aggregation) is not run here: such collectives use the ring.
// - Several jobs (Scenario::jobs): each job's programs, groups and communicators are its own, on
//   its GPUs of the topology (a job's rank r is its r-th GPU); everything at run time is indexed
//   by the topology's GPU, so all jobs run in the one application on the shared fabric.

#include <functional>
#include <optional>

#include "stepsim/core/result.hpp"
#include "stepsim/fabric/fabric_samples.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/workload/comm_model.hpp"
#include "stepsim/workload/scenario.hpp"
#include "stepsim/workload/step_summary.hpp"

namespace stepsim::workload {

/// Runs the whole step of `s` (validated; fidelity packet or cell) on `topo`. `folded` costs
/// the collectives inside one server (the packet comm model of the same fidelity), by job: one
/// for a scenario without `jobs`, else each job's (made from job_scenario). `progress`
/// (may be empty) is called with the simulated time on rank 0's engine progress reports.
/// `foldable` (may be empty) is called once, on every rank, before the engine starts, with the
/// rails `step.fold: rails` would fold when the step runs with `none` and could fold (> 1).
/// Collective over `sync`.
/// Bytes of the whole step's own state on one rank, beside the fabric's: per collective record
/// (StepPlan::records) its two 8-byte atomics, their copy in the collection and a
/// CollectiveRecord; per connection a nic::Connection. Checked against the machine's memory
/// (core/memory.hpp) right after the plan is made, before the engine starts.
inline constexpr double kRecordAtomicsBytes = 16;
double whole_step_state_bytes(std::uint64_t records, std::uint64_t connections);

Result<StepTrace> run_whole_step_trace(const Scenario& s, const topology::Topology& topo,
                                       const std::vector<CommModel*>& folded, pdes::Sync& sync,
                                       pdes::EngineOptions engine,
                                       const std::function<bool(double)>& progress,
                                       fabric::FabricSamples* samples = nullptr,
                                       const std::function<void(std::uint32_t)>& foldable = {},
                                       const std::vector<std::uint32_t>* trace_gpus = nullptr);

/// The time the last GPU of the whole step of `s` ends, from a run that stops there (no samples;
/// `engine`'s progress reports go on). Empty when that run ended otherwise (a signal, failed
/// transfers, a stall or the scenario's end: the step's own run then ends the same way). For
/// background traffic asked to last past the step: the step's run then stops it there, the
/// same time at any number of ranks (a run stopped when every GPU is done would stop at a window
/// boundary, which depends on the partition). Collective over `sync`.
Result<std::optional<SimTime>> whole_step_end(const Scenario& s, const topology::Topology& topo,
                                              const std::vector<CommModel*>& folded,
                                              pdes::Sync& sync, pdes::EngineOptions engine);

}  // namespace stepsim::workload
