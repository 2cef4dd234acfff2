#pragma once
/// The conservative, windowed, deterministic parallel engine (see docs/engine.md).
///
/// Loop on every rank: exchange events with the neighbour ranks and agree on g = global minimum
/// next-event time in the same round (Sync::exchange_min); every LP processes its events with
/// time < min(g + L, end) (OpenMP threads over LPs); cross-LP events go to outboxes; repeat. L is
/// the smallest channel latency of the LP graph. Results depend only on the model, never on ranks
/// or threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/pdes/lp_graph.hpp"
#include "stepsim/pdes/model.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::pdes {

/// A progress report, on rank 0, every EngineOptions::progress_every seconds of wall time.
struct Progress {
  SimTime now;               ///< global virtual time (start of the current window)
  SimTime end;               ///< end time of the run (never() if none)
  std::uint64_t events = 0;  ///< events committed so far, all ranks
  double wall_s = 0;         ///< wall time since the run started
  std::uint64_t work = 0;    ///< EngineOptions::progress_work summed over ranks (0 if unset)
};

struct EngineOptions {
  int threads = 1;                                   ///< OpenMP threads per rank
  SimTime end = SimTime::never();                    ///< process events with time < end
  std::string partitioner = "block";                 ///< registered partitioner name
  double progress_every = 0;                         ///< seconds between progress reports; 0 = none
  std::function<void(const Progress&)> on_progress;  ///< called on rank 0 only
  /// The model's count of work done so far on this rank (say, bytes delivered), summed over ranks
  /// into Progress::work. Called on every rank at a progress report, on the master thread with
  /// every worker idle (a window boundary), so it may read per-LP state. Null: 0.
  std::function<std::uint64_t()> progress_work;
  /// Called on every rank, on the master thread, with every worker idle: at each window boundary
  /// once the global minimum `now` is known (no event before `now` is left anywhere; `last`
  /// false), and once when the run ends (`last` true, `now` = RunStats::final_time; also after a
  /// stop request: then no LP has processed an event at or after `now`). Every rank calls it with
  /// the same arguments, so it may make collective MPI and HDF5 calls. Time spent in it is
  /// RankStats::hook_s.
  std::function<void(SimTime now, bool last)> at_window;
  /// This rank's vote to stop, asked at every window boundary (master thread, every worker idle)
  /// before the window's synchronisation, which carries it (no extra round). The first window
  /// where every rank votes true, the engine acts as if Engine::request_stop() were called right
  /// after it (RunStats::stopped_by_vote). Null: no vote.
  std::function<bool()> stop_vote;
  /// One-rank runs: other partitions to measure the window parallelism of, "NAME:PARTS,..."
  /// (RunStats::probes; printed to stderr at the end). Empty: the environment variable
  /// STEPSIM_PARTITION_PROBE, if set (docs/engine.md).
  std::string partition_probe;
};

/// The window parallelism a partition would reach (measured on one rank: windows do not depend
/// on the ranks).
struct PartitionProbe {
  std::string partitioner;
  int parts = 0;
  std::uint64_t critical_events = 0;  ///< sum over windows of the busiest part's events
  double cut_share = 0;               ///< share of the LP graph's traffic weight that is cut
  double imbalance = 1.0;             ///< static: max / mean part vertex weight
};

/// Per-rank statistics of a run.
struct RankStats {
  int rank = 0;
  std::uint64_t events = 0;         ///< events committed by this rank's LPs
  std::uint64_t sent_remote = 0;    ///< events sent to LPs on other ranks
  std::uint64_t sent_other_lp = 0;  ///< events sent to other LPs on this rank
  std::uint64_t peak_pending = 0;   ///< most events pending at a window boundary
  std::uint64_t queue_bytes = 0;    ///< bytes held by event storage at the end (queues+buffers)
  double compute_s = 0;             ///< processing windows (slowest thread)
  double exchange_s = 0;            ///< delivering and exchanging events
  double allreduce_s = 0;           ///< global minimum (includes waiting for other ranks)
  double hook_s = 0;                ///< in EngineOptions::at_window
  double thread_imbalance = 1.0;    ///< max / mean of thread compute time
  std::int64_t peak_rss = 0;        ///< VmHWM in bytes
  int lps = 0;                      ///< LPs owned
};

/// Window parallelism: `events` over the `critical` ones (the sum over windows of the busiest
/// part's events); 1 when nothing ran.
[[nodiscard]] inline double window_parallelism(std::uint64_t events, std::uint64_t critical) {
  return critical > 0 ? static_cast<double>(events) / static_cast<double>(critical) : 1.0;
}

/// Result of Engine::run.
struct RunStats {
  bool completed = false;        ///< false if stopped early (request_stop)
  bool stopped_by_vote = false;  ///< every rank voted to stop (EngineOptions::stop_vote)
  SimTime final_time;            ///< global virtual time at which the run stopped
  SimTime lookahead;             ///< L used for windows
  std::uint64_t events = 0;      ///< committed events, all ranks
  std::uint64_t windows = 0;     ///< synchronisation windows
  /// Sum over windows of the events the busiest rank committed in it: the run's critical path in
  /// events. events / critical_events measures each window's balance whatever the machine.
  std::uint64_t critical_events = 0;
  SimTime simulated;         ///< virtual time the windows covered (end of the last window)
  std::uint64_t digest = 0;  ///< order-independent hash of final LP states and pending events
  double wall_s = 0;         ///< wall time of the run (max over ranks)
  int ranks = 1;
  int threads = 1;
  std::vector<RankStats> per_rank;     ///< all ranks on rank 0; own rank elsewhere
  std::vector<PartitionProbe> probes;  ///< EngineOptions::partition_probe's, in its order
  /// max / mean of committed events per rank.
  [[nodiscard]] double event_imbalance() const;
  /// events / critical_events: the speed-up over one rank that the per-window balance predicts
  /// when events cost alike (1 on one rank; `ranks` if every window's events are spread evenly).
  [[nodiscard]] double window_parallelism() const;
};

class Worker;

/// The engine for one rank. Construct on every rank with the same graph and options.
class Engine {
 public:
  /// Partitions the graph, derives lookahead and neighbour ranks. Errors are user errors
  /// (unknown partitioner, invalid thread count).
  static Result<std::unique_ptr<Engine>> create(const LpGraph& graph, Sync& sync,
                                                EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs the model to the end time (or until no event is left, or a stop request).
  RunStats run(Model& model);

  [[nodiscard]] SimTime lookahead() const { return lookahead_; }
  [[nodiscard]] std::span<const LpId> local_lps() const { return local_lps_; }
  [[nodiscard]] int owner(LpId lp) const { return owner_[lp]; }
  [[nodiscard]] const PartitionQuality& partition_quality() const { return quality_; }
  [[nodiscard]] std::span<const int> neighbour_ranks() const { return neighbours_; }
  [[nodiscard]] const EngineOptions& options() const { return options_; }

  /// Asks every running engine in the process to stop at the next window boundary.
  /// Async-signal-safe (for SIGINT/SIGTERM handlers).
  static void request_stop();
  /// Clears a previous stop request.
  static void clear_stop();
  /// Whether a stop was requested (this process only; runs agree on it at window boundaries).
  [[nodiscard]] static bool stop_requested() {
    return stop_requested_.load(std::memory_order_relaxed);
  }

 private:
  friend class Worker;
  Engine(const LpGraph& graph, Sync& sync, EngineOptions options, std::vector<int> owner,
         PartitionQuality quality);

  struct Home {
    std::int32_t rank;
    std::uint32_t worker;
    std::uint32_t slot;
  };

  struct Loop;
  struct Probe;
  // Master thread, between barriers: this rank's earliest time, the exchange with the neighbour
  // ranks and the global minimum, progress, the stop decision, the window hook.
  void next_window(Loop& loop);
  // Sends the workers' events for other ranks and receives theirs (recv_buffer_, or the
  // workers' inboxes); min-reduces `reduce` over all ranks in the same round.
  void exchange_remote(std::span<std::int64_t> reduce);
  // A stop was agreed in this window: the run ends where the furthest LP has got to.
  void stop_at(Loop& loop);
  void report_progress(Loop& loop);
  RunStats finish(Model& model, Loop& loop);
  void gather_rank_stats(const RankStats& mine, RunStats& stats);
  void fill_digest(Model& model, RunStats& stats);

  const LpGraph& graph_;
  Sync& sync_;
  EngineOptions options_;
  std::vector<int> owner_;
  PartitionQuality quality_;
  SimTime lookahead_;
  std::vector<SimTime> lp_lookahead_;  // by LP: smallest latency of its incoming channels
  std::vector<LpId> local_lps_;
  std::vector<Home> homes_;
  std::vector<int> neighbours_;
  std::vector<std::int32_t> neighbour_index_;  // by rank, -1 if not a neighbour
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::vector<Event>> send_buffers_;  // per neighbour
  std::vector<Event> recv_buffer_;
  std::vector<std::vector<Event>> inbox_;  // per worker, from other ranks
  Model* model_ = nullptr;
  std::unique_ptr<Probe> probe_;  // STEPSIM_PARTITION_PROBE (docs/engine.md), or null

  static std::atomic<bool> stop_requested_;
};

}  // namespace stepsim::pdes
