#pragma once
// Checks the commands share before they simulate: numeric options that must be finite and in
// range, unit options with a range, output files that must be
// writable (and distinct from each other and from the inputs), and a memory estimate against
// what the machine has. Each returns the user error to print (naming the option and the range).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/memory.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/topology/topology_counts.hpp"

namespace stepsim::cli {

/// CLI11 validator: a finite number in [lo, hi] (CLI::Range lets NaN through).
CLI::Validator finite_range(double lo, double hi);

/// `text` as a time / size in [lo, hi]; the error names `option` and the range.
Result<SimTime> time_option(const std::string& option, const std::string& text, SimTime lo,
                            SimTime hi);
Result<Bytes> bytes_option(const std::string& option, const std::string& text, std::int64_t lo,
                           std::int64_t hi);

Result<DataRate> rate_option(const std::string& option, const std::string& text, DataRate lo,
                             DataRate hi);
Result<Length> length_option(const std::string& option, const std::string& text, Length lo,
                             Length hi);

/// A list of GPUs as `option` takes it: GPUs and inclusive ranges joined by commas ("0-7,64"),
/// each GPU one that `allowed` marks (by GPU index; `allowed_text` describes them in the
/// error). Ascending, each once.
Result<std::vector<std::uint32_t>> gpu_list_option(const std::string& option,
                                                   const std::string& text,
                                                   const std::vector<bool>& allowed,
                                                   const std::string& allowed_text);

/// Payload bytes per packet of the benchmarks' --mtu: 256..9000, the range of fabric.mtu.
inline constexpr std::int64_t kMinMtu = 256;
inline constexpr std::int64_t kMaxMtu = 9000;

/// An output file of a command: the option that names it and the path.
struct OutputFile {
  std::string option;  ///< "-o", "--json", "--trace"
  std::string path;
};

/// Adds `option` to `outputs` when the command line gave it (even as "") or `path` is a default.
void add_output(std::vector<OutputFile>& outputs, const CLI::App& cmd, const std::string& option,
                const std::string& path);

/// Checks, before any simulation, that every output can be written: not empty, not a
/// directory, not the same file as another output or as an input, and creatable (a new file is
/// created and removed again; an existing one is opened for appending, not truncated).
Result<bool> check_outputs(const std::vector<OutputFile>& outputs,
                           const std::vector<std::string>& inputs);

/// What a packet- or cell-level simulation of a topology holds before any traffic, estimated
/// from its counts (no model is built): the topology and the routing tables on every rank, the
/// fabric LPs' state spread over the ranks. The per-LP figures are those `stepsim check`
/// measures (176 B per LP plus 472 B per port; a unit test keeps them honest).
struct MemoryEstimate {
  double replicated_bytes = 0;  ///< on every rank: topology and routing tables
  double lp_bytes = 0;          ///< all LPs together (split over the ranks)
  /// Bytes on one node running `local_ranks` of `ranks` ranks.
  [[nodiscard]] double per_node(int ranks, int local_ranks) const {
    return local_ranks * (replicated_bytes + lp_bytes / ranks);
  }
};
// Fabric state per LP and per port, as `stepsim check` measures it (FabricModel::lp_memory_bytes):
// a node's own state, and a port's state (the fabric's sizeof of it) with one packet queued.
// InputChecks.MemoryEstimateBoundsTheMeasuredFootprint keeps them honest.
inline constexpr double kLpBaseBytes = 200;
[[nodiscard]] double lp_port_bytes();
inline constexpr double kRoutingEntryBytes = 16;
MemoryEstimate estimate_fabric_memory(const topology::Topology& topo);
/// The same from a topology's counts (topology_counts.hpp), before it is built.
MemoryEstimate estimate_fabric_memory(const topology::TopologyCounts& counts);
/// The topology's own structures (nodes, ports, links) from its counts: what building it holds.
double topology_bytes(const topology::TopologyCounts& counts);

/// Reads topology file `path` and builds it only when its estimate from the counts fits this
/// machine's memory on every rank (check_memory; `fabric`: a packet or cell simulation on
/// `ranks` ranks, estimate_fabric_memory, else the topology alone): a huge topology is refused
/// in a moment, before anything is allocated. Collective: every rank must call it.
Result<topology::Topology> load_topology_within_memory(const std::string& path, int ranks,
                                                       bool fabric);

using stepsim::local_rank_count;  // core/memory.hpp

/// Refuses a simulation of `topo` on `ranks` ranks whose estimate exceeds the machine's memory.
Result<bool> check_fabric_memory(const topology::Topology& topo, int ranks);

/// The outcome of a check every rank made (or only rank 0, for `mine` on the others: true),
/// agreed: an error on every rank if any rank has one. A rank without its own error gets a
/// generic one (only rank 0 prints). Collective: every rank must call it.
Result<bool> agree_on_all_ranks(const Result<bool>& mine);

/// check_outputs() on rank 0 (the rank that writes; no race between ranks creating and removing
/// the same file), agreed on all ranks.
Result<bool> check_outputs_once(const std::vector<OutputFile>& outputs,
                                const std::vector<std::string>& inputs, int rank);

/// Refuses a run whose estimated memory (bytes) exceeds what the machine has (MemAvailable, or
/// the environment's STEPSIM_MEMORY_LIMIT when smaller);
/// `what` says what was counted ("524,288 servers and 81,920 switches").
Result<bool> check_memory(double estimate_bytes, const std::string& what);

}  // namespace stepsim::cli
