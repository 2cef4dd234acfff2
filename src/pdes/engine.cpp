#include "stepsim/pdes/engine.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "src/pdes/worker.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/core/memory.hpp"
#include "stepsim/kernels/reduce.hpp"

namespace stepsim::pdes {

std::atomic<bool> Engine::stop_requested_{false};

// Not in an anonymous namespace: Engine::Loop holds one (GCC's -Wsubobject-linkage in a unity
// build, where this file is not the main file).
namespace engine_detail {
// A diagnostic (docs/engine.md): with STEPSIM_WINDOW_STATS set, each rank prints to stderr at the
// end of a run how many windows committed how many of its events (powers of two) and how far g
// advanced from one window to the next, in lookaheads (powers of two; sparse windows jump far).
struct WindowStats {
  std::uint64_t last_events = 0;
  std::uint64_t by_events[41] = {};
  std::uint64_t by_advance[31] = {};
  std::uint64_t events_by_advance[31] = {};

  static int log2_bucket(double x, int top) {
    int b = 0;
    while (b < top && std::ldexp(1.0, b) <= x) ++b;
    return b;
  }
  void add(std::uint64_t events, std::int64_t advance_ps, SimTime lookahead) {
    const std::uint64_t d = events - last_events;
    last_events = events;
    ++by_events[log2_bucket(static_cast<double>(d), 40)];
    const double la = static_cast<double>(std::max<std::int64_t>(1, lookahead.picoseconds()));
    const int c = log2_bucket(static_cast<double>(advance_ps) / la, 30);
    ++by_advance[c];
    events_by_advance[c] += d;
  }
  void print(int rank, SimTime lookahead, std::uint64_t windows,
             const std::vector<std::uint64_t>& kinds) const {
    if (std::getenv("STEPSIM_WINDOW_STATS") == nullptr) return;
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      if (kinds[k] == 0) continue;
      std::fprintf(stderr, "  rank %d: %" PRIu64 " events of kind %zu%s\n", rank, kinds[k], k,
                   k + 1 == kinds.size() ? " or above" : "");
    }
    std::fprintf(stderr, "window stats: rank %d, lookahead %s, %" PRIu64 " windows\n", rank,
                 to_string(lookahead).c_str(), windows);
    for (int b = 0; b <= 40; ++b) {
      if (by_events[b] == 0) continue;
      std::fprintf(stderr, "  rank %d: %" PRIu64 " windows committed < 2^%d of its events\n", rank,
                   by_events[b], b);
    }
    for (int c = 0; c <= 30; ++c) {
      if (by_advance[c] == 0) continue;
      std::fprintf(stderr,
                   "  rank %d: %" PRIu64 " windows advanced g by < 2^%d lookaheads (%" PRIu64
                   " of its events)\n",
                   rank, by_advance[c], c, events_by_advance[c]);
    }
  }
};
}  // namespace engine_detail

// A diagnostic (docs/engine.md): STEPSIM_PARTITION_PROBE="metis:2,cyclic:4,..." makes a one-rank
// run count each window's events by the parts of other partitions as well, and print at the end
// the window parallelism each would reach (RunStats::window_parallelism): windows do not depend
// on the ranks, so one run compares partitioners deterministically on a loaded machine.
struct Engine::Probe {
  struct Config {
    PartitionProbe result;
    std::size_t first = 0;  // its counters: [first, first + parts)
  };
  std::vector<Config> configs;
  std::vector<std::uint64_t> window;  // summed over workers
  // STEPSIM_WINDOW_TRACE=FILE: each window's nonzero counters of the first probed partition
  // (cyclic:N with N the LP count gives events by LP), for partition studies offline.
  std::FILE* trace = nullptr;
  std::vector<std::uint32_t> trace_row;
  ~Probe() {
    if (trace != nullptr) std::fclose(trace);
  }

  // NAME:PARTS items; a bad item is skipped with a message (a diagnostic, not a user input).
  static std::unique_ptr<Probe> parse(std::string spec, int ranks) {
    if (spec.empty()) {
      const char* env = std::getenv("STEPSIM_PARTITION_PROBE");
      spec = env != nullptr ? env : "";
    }
    if (spec.empty()) return nullptr;
    if (ranks != 1) {
      std::fprintf(stderr, "partition probe: ignored, it needs a one-rank run\n");
      return nullptr;
    }
    auto probe = std::make_unique<Probe>();
    std::size_t counters = 0;
    for (std::size_t at = 0; at < spec.size();) {
      std::size_t comma = spec.find(',', at);
      if (comma == std::string::npos) comma = spec.size();
      const std::string item = spec.substr(at, comma - at);
      at = comma + 1;
      const std::size_t colon = item.find(':');
      Config c;
      c.result.partitioner = item.substr(0, colon);
      c.result.parts = colon == std::string::npos ? 2 : std::atoi(item.c_str() + colon + 1);
      if (!make_partitioner(c.result.partitioner) || c.result.parts < 1 || c.result.parts > 4096) {
        std::fprintf(stderr, "partition probe: skipped '%s' (NAME:PARTS, NAME a partitioner)\n",
                     item.c_str());
        continue;
      }
      c.first = counters;
      counters += static_cast<std::size_t>(c.result.parts);
      probe->configs.push_back(std::move(c));
    }
    if (probe->configs.empty()) return nullptr;
    probe->window.assign(counters, 0);
    if (const char* path = std::getenv("STEPSIM_WINDOW_TRACE"); path != nullptr && *path != 0) {
      probe->trace = std::fopen(path, "wb");
      if (probe->trace == nullptr) std::fprintf(stderr, "window trace: cannot write %s\n", path);
    }
    return probe;
  }

  // The counter of every LP under every probed partition: slots[c * n + v].
  std::vector<std::uint32_t> slots(const LpGraph& graph) {
    const LpId n = graph.size();
    std::vector<std::uint32_t> out(configs.size() * n);
    for (std::size_t c = 0; c < configs.size(); ++c) {
      PartitionProbe& r = configs[c].result;
      const std::vector<int> owner =
          make_partitioner(r.partitioner).value()->partition(graph, r.parts);
      if (auto q = evaluate_partition(graph, owner, r.parts); q) {
        r.imbalance = q->imbalance;
        r.cut_share = q->total_weight > 0 ? static_cast<double>(q->cut_weight) /
                                                static_cast<double>(q->total_weight)
                                          : 0.0;
      }
      for (LpId v = 0; v < n; ++v) {
        out[c * n + v] =
            static_cast<std::uint32_t>(configs[c].first + static_cast<std::size_t>(owner[v]));
      }
    }
    return out;
  }

  void start_run() {
    for (Config& c : configs) c.result.critical_events = 0;
  }

  void end_window(std::vector<std::unique_ptr<Worker>>& workers) {
    std::fill(window.begin(), window.end(), 0);
    for (auto& w : workers) {
      for (std::size_t i = 0; i < window.size(); ++i) window[i] += w->probe_counts[i];
      std::fill(w->probe_counts.begin(), w->probe_counts.end(), 0);
    }
    for (Config& c : configs) {
      const auto first = window.begin() + static_cast<std::ptrdiff_t>(c.first);
      c.result.critical_events += *std::max_element(first, first + c.result.parts);
    }
    if (trace != nullptr) write_trace_row();
  }

  // One record per window: the number of nonzero counters k (uint32), then k pairs (counter,
  // events), uint32 each.
  void write_trace_row() {
    trace_row.assign(1, 0);
    const auto parts = static_cast<std::uint32_t>(configs.front().result.parts);
    for (std::uint32_t i = 0; i < parts; ++i) {
      if (window[i] == 0) continue;
      trace_row.push_back(i);
      trace_row.push_back(static_cast<std::uint32_t>(window[i]));
    }
    trace_row[0] = static_cast<std::uint32_t>(trace_row.size() / 2);
    std::fwrite(trace_row.data(), sizeof(std::uint32_t), trace_row.size(), trace);
  }

  void report(RunStats& stats) const {
    for (const Config& c : configs) {
      const PartitionProbe& r = c.result;
      stats.probes.push_back(r);
      if (stats.events == 0) continue;
      std::fprintf(
          stderr,
          "partition probe: %s over %d ranks: window parallelism %.3f (%" PRIu64 " events, %" PRIu64
          " on the critical path); %.1f%% of the traffic crosses "
          "ranks, static imbalance %.3f\n",
          r.partitioner.c_str(), r.parts, pdes::window_parallelism(stats.events, r.critical_events),
          stats.events, r.critical_events, 100 * r.cut_share, r.imbalance);
    }
  }
};

void Engine::request_stop() {
  stop_requested_.store(true, std::memory_order_relaxed);
}
void Engine::clear_stop() {
  stop_requested_.store(false, std::memory_order_relaxed);
}

double RunStats::event_imbalance() const {
  if (per_rank.empty()) return 1.0;
  std::uint64_t max = 0;
  std::uint64_t sum = 0;
  for (const RankStats& r : per_rank) {
    max = std::max(max, r.events);
    sum += r.events;
  }
  return sum > 0 ? static_cast<double>(max) * static_cast<double>(per_rank.size()) /
                       static_cast<double>(sum)
                 : 1.0;
}

double RunStats::window_parallelism() const {
  return pdes::window_parallelism(events, critical_events);
}

Result<std::unique_ptr<Engine>> Engine::create(const LpGraph& graph, Sync& sync,
                                               EngineOptions options) {
  if (options.threads < 1 || options.threads > 4096) {
    return Error{"threads must be between 1 and 4096, got " + std::to_string(options.threads)};
  }
  if (options.end <= SimTime::zero()) {
    return Error{"the end time must be positive, got " + to_string(options.end)};
  }
  auto partitioner = make_partitioner(options.partitioner);
  if (!partitioner) return partitioner.error();
  std::vector<int> owner = partitioner.value()->partition(graph, sync.size());
  auto quality = evaluate_partition(graph, owner, sync.size());
  STEPSIM_CHECK(quality.ok(), "partitioner '" + options.partitioner +
                                  "' produced an invalid partition: " +
                                  (quality.ok() ? std::string() : quality.error().message));
  return std::unique_ptr<Engine>(
      new Engine(graph, sync, std::move(options), std::move(owner), quality.value()));
}

Engine::Engine(const LpGraph& graph, Sync& sync, EngineOptions options, std::vector<int> owner,
               PartitionQuality quality)
    : graph_(graph),
      sync_(sync),
      options_(std::move(options)),
      owner_(std::move(owner)),
      quality_(std::move(quality)),
      lookahead_(graph.min_latency()) {
  const int me = sync_.rank();
  lp_lookahead_.resize(graph_.size());
  for (LpId v = 0; v < graph_.size(); ++v) {
    lp_lookahead_[v] = graph_.min_latency_into(v);
    if (owner_[v] == me) local_lps_.push_back(v);
  }
  // Neighbour ranks: owners of LPs adjacent to ours (everyone, for an all-to-all graph).
  std::vector<char> is_nb(static_cast<std::size_t>(sync_.size()), 0);
  if (graph_.all_to_all()) {
    std::fill(is_nb.begin(), is_nb.end(), 1);
  } else {
    for (LpId v : local_lps_) {
      for (const LpEdge& e : graph_.neighbours(v))
        is_nb[static_cast<std::size_t>(owner_[e.to])] = 1;
    }
  }
  is_nb[static_cast<std::size_t>(me)] = 0;
  neighbour_index_.assign(static_cast<std::size_t>(sync_.size()), -1);
  for (int r = 0; r < sync_.size(); ++r) {
    if (is_nb[static_cast<std::size_t>(r)]) {
      neighbour_index_[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(neighbours_.size());
      neighbours_.push_back(r);
    }
  }
  sync_.set_neighbours(neighbours_);
  send_buffers_.resize(neighbours_.size());

  // Threads own contiguous blocks of local LPs, balanced by vertex weight.
  const auto threads = static_cast<std::uint32_t>(options_.threads);
  const auto nlocal = static_cast<std::uint32_t>(local_lps_.size());
  std::int64_t total = 0;
  for (LpId v : local_lps_) total += std::max<std::int64_t>(1, graph_.vertex_weight(v));
  std::vector<std::uint32_t> bounds(threads + 1, nlocal);
  bounds[0] = 0;
  {
    std::int64_t acc = 0;
    std::uint32_t t = 1;
    for (std::uint32_t i = 0; i < nlocal && t < threads; ++i) {
      acc += std::max<std::int64_t>(1, graph_.vertex_weight(local_lps_[i]));
      while (t < threads && acc * threads >= total * t) bounds[t++] = i + 1;
    }
  }
  homes_.assign(graph_.size(), Home{-1, 0, 0});
  for (LpId v = 0; v < graph_.size(); ++v) homes_[v].rank = owner_[v];
  for (std::uint32_t t = 0; t < threads; ++t) {
    for (std::uint32_t s = bounds[t]; s < bounds[t + 1]; ++s) homes_[local_lps_[s]] = {me, t, s};
  }
  inbox_.resize(threads);
  for (std::uint32_t t = 0; t < threads; ++t) {
    workers_.push_back(
        std::make_unique<Worker>(*this, t, bounds[t], bounds[t + 1], threads, neighbours_.size()));
  }
  if (std::getenv("STEPSIM_WINDOW_STATS") != nullptr) {
    for (auto& w : workers_) w->kind_counts.assign(Worker::kKindCounters, 0);
  }
  probe_ = Probe::parse(options_.partition_probe, sync_.size());
  if (probe_) {
    const std::vector<std::uint32_t> slots = probe_->slots(graph_);
    for (auto& w : workers_) {
      w->set_probe(static_cast<std::uint32_t>(probe_->configs.size()), slots, graph_.size(),
                   probe_->window.size());
    }
  }
}

Engine::~Engine() = default;

// One run's window-loop state: written by the master thread between barriers, read by all.
struct Engine::Loop {
  using Clock = std::chrono::steady_clock;
  SimTime g = SimTime::zero();
  SimTime window_end = SimTime::zero();
  SimTime end = SimTime::never();  // options_.end, or where a stop brings every LP (stop_at)
  bool done = false;
  bool interrupted = false;
  bool voted = false;  // every rank voted to stop (EngineOptions::stop_vote)
  std::uint64_t windows = 0;
  std::uint64_t committed = 0;        // this rank's events at the last window boundary
  std::uint64_t critical_events = 0;  // sum over windows of the busiest rank's events
  Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  Clock::time_point phase = start;
  RankStats mine;
  engine_detail::WindowStats window_stats;

  // Seconds since the last phase mark; moves the mark.
  double lap() {
    const Clock::time_point t = Clock::now();
    const double s = std::chrono::duration<double>(t - phase).count();
    phase = t;
    return s;
  }
  [[nodiscard]] double since(Clock::time_point a) const {
    return std::chrono::duration<double>(Clock::now() - a).count();
  }
};

RunStats Engine::run(Model& model) {
  model_ = &model;
  for (auto& w : workers_) w->reset();
  for (auto& v : inbox_) v.clear();
  recv_buffer_.clear();
  model.setup(local_lps_);
  if (probe_) probe_->start_run();
  const int threads = static_cast<int>(workers_.size());

  Loop loop;
  loop.end = options_.end;
  loop.mine.rank = sync_.rank();
  loop.mine.lps = static_cast<int>(local_lps_.size());

  // Per window: every worker hands its events for other workers over; the master computes the
  // rank's earliest pending time (its queues and what it sends to other ranks), exchanges events
  // with the neighbour ranks and agrees on the global minimum g in the same round
  // (Sync::exchange_min); every worker takes the events from other ranks and processes its
  // window [g, g + own lookahead).
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto tid = static_cast<std::size_t>(omp_get_thread_num());
    Worker& w = *workers_[tid];
    w.init_lps(model);
    for (;;) {
#pragma omp barrier
      if (threads > 1) {
        for (auto& other : workers_) {
          if (other.get() != &w) w.deliver(other->to_worker[tid]);
        }
      }
#pragma omp barrier
#pragma omp master
      next_window(loop);
#pragma omp barrier
      w.deliver(threads == 1 ? recv_buffer_ : inbox_[tid]);
      if (loop.done) break;
      w.process_window(model, loop.g, loop.end);
    }
  }
  std::vector<std::uint64_t> kinds;
  for (auto& w : workers_) {
    kinds.resize(w->kind_counts.size());
    for (std::size_t k = 0; k < kinds.size(); ++k) kinds[k] += w->kind_counts[k];
  }
  loop.window_stats.print(sync_.rank(), lookahead_, loop.windows, kinds);
  RunStats stats = finish(model, loop);
  if (probe_) probe_->report(stats);
  model_ = nullptr;
  return stats;
}

void Engine::next_window(Loop& loop) {
  loop.mine.compute_s += loop.lap();
  SimTime local_min = SimTime::never();
  std::uint64_t pending = 0;
  for (auto& wk : workers_) {
    local_min = std::min({local_min, wk->next_time(), wk->remote_min});
    wk->remote_min = SimTime::never();
    pending += wk->pending();
  }
  const bool want_progress = sync_.rank() == 0 && options_.on_progress &&
                             options_.progress_every > 0 &&
                             loop.since(loop.last_progress) >= options_.progress_every;
  std::uint64_t committed = 0;
  for (auto& wk : workers_) committed += wk->processed;
  // The fourth value is minus this rank's events of the window just processed: its minimum over
  // ranks is minus the busiest rank's (RunStats::critical_events); the fifth is 1 where the rank
  // votes to stop (EngineOptions::stop_vote).
  const bool vote = options_.stop_vote && !loop.voted && options_.stop_vote();
  std::int64_t reduce[5] = {
      local_min.picoseconds(), stop_requested_.load(std::memory_order_relaxed) ? 0 : 1,
      want_progress ? 0 : 1, -static_cast<std::int64_t>(committed - loop.committed), vote ? 1 : 0};
  exchange_remote(reduce);
  loop.committed = committed;
  if (probe_) probe_->end_window(workers_);
  loop.critical_events += static_cast<std::uint64_t>(-reduce[3]);
  pending += recv_buffer_.size();
  for (const auto& box : inbox_) pending += box.size();
  loop.mine.peak_pending = std::max(loop.mine.peak_pending, pending);
  loop.mine.exchange_s += loop.lap();
  loop.window_stats.add(committed, reduce[0] - loop.g.picoseconds(), lookahead_);
  loop.g = SimTime::ps(reduce[0]);
  if (reduce[2] == 0) report_progress(loop);
  if (reduce[1] == 0 && !loop.interrupted && !loop.g.is_never() && loop.g < loop.end) {
    stop_at(loop);
  }
  if (loop.g.is_never() || loop.g >= loop.end) {
    loop.done = true;
  } else {
    loop.window_end = std::min(loop.g.saturating_add(lookahead_), loop.end);  // (progress)
    ++loop.windows;
  }
  if (reduce[4] == 1 && !loop.done) {
    // Every rank voted: a stop request from here on, as if the window hook had made it.
    loop.voted = true;
    request_stop();
  }
  loop.mine.allreduce_s += loop.lap();
  if (!loop.done && options_.at_window) {
    options_.at_window(loop.g, false);
    loop.mine.hook_s += loop.lap();
  }
}

void Engine::stop_at(Loop& loop) {
  // Each LP has run up to its own window end (g plus its incoming lookahead), some past g. The
  // run goes on, with no new stop decision, until every LP has reached the furthest of them: then
  // the state is the one an `end` at that time gives (every event before it, none after), and so
  // is what the model's last window hook writes.
  SimTime horizon = SimTime::zero();
  for (auto& wk : workers_) horizon = std::max(horizon, wk->horizon());
  std::int64_t furthest[1] = {-horizon.picoseconds()};
  sync_.allreduce_min(furthest);
  loop.interrupted = true;
  loop.end = std::min(options_.end, std::max(loop.g, SimTime::ps(1 - furthest[0])));
}

void Engine::exchange_remote(std::span<std::int64_t> reduce) {
  std::span<std::vector<Event>> out;
  if (workers_.size() == 1) {
    out = workers_[0]->to_rank;
  } else {
    for (std::size_t nb = 0; nb < neighbours_.size(); ++nb) {
      send_buffers_[nb].clear();
      for (auto& w : workers_) {
        auto& src = w->to_rank[nb];
        send_buffers_[nb].insert(send_buffers_[nb].end(), src.begin(), src.end());
        src.clear();
      }
    }
    out = send_buffers_;
  }
  recv_buffer_.clear();
  sync_.exchange_min(out, recv_buffer_, reduce);
  for (auto& v : out) v.clear();
  if (workers_.size() == 1) return;  // worker 0 takes recv_buffer_ directly
  for (const Event& ev : recv_buffer_) inbox_[homes_[ev.dst].worker].push_back(ev);
  recv_buffer_.clear();
}

void Engine::report_progress(Loop& loop) {
  // Events and the model's work, summed in one call.
  std::uint64_t sum[2] = {0, options_.progress_work ? options_.progress_work() : 0};
  for (auto& wk : workers_) sum[0] += wk->processed;
  sync_.allreduce_sum(sum);
  if (sync_.rank() == 0) {
    loop.last_progress = Loop::Clock::now();
    options_.on_progress(Progress{loop.g, options_.end, sum[0], loop.since(loop.start), sum[1]});
  }
}

RunStats Engine::finish(Model& model, Loop& loop) {
  RunStats stats;
  stats.lookahead = lookahead_;
  stats.ranks = sync_.size();
  stats.threads = static_cast<int>(workers_.size());
  stats.completed = !loop.interrupted;
  stats.stopped_by_vote = loop.voted;
  stats.final_time = std::min(loop.g, loop.end);
  if (options_.at_window) {
    loop.lap();
    options_.at_window(stats.final_time, true);
    loop.mine.hook_s += loop.lap();
  }
  stats.wall_s = loop.since(loop.start);
  stats.windows = loop.windows;
  stats.critical_events = loop.critical_events;
  stats.simulated = loop.windows > 0 ? loop.window_end : SimTime::zero();
  RankStats& mine = loop.mine;
  double tmax = 0;
  double tsum = 0;
  for (auto& wk : workers_) {
    mine.events += wk->processed;
    mine.sent_remote += wk->sent_remote;
    mine.sent_other_lp += wk->sent_other_lp;
    mine.queue_bytes += wk->storage_bytes();
    tmax = std::max(tmax, wk->compute_s);
    tsum += wk->compute_s;
  }
  mine.queue_bytes +=
      (recv_buffer_.capacity() +
       std::accumulate(send_buffers_.begin(), send_buffers_.end(), std::size_t{0},
                       [](std::size_t a, const auto& v) { return a + v.capacity(); })) *
      sizeof(Event);
  mine.thread_imbalance = tsum > 0 ? tmax * static_cast<double>(workers_.size()) / tsum : 1.0;
  mine.peak_rss = peak_rss_bytes();

  std::uint64_t total_events = mine.events;
  sync_.allreduce_sum(std::span<std::uint64_t>(&total_events, 1));
  stats.events = total_events;
  fill_digest(model, stats);
  gather_rank_stats(mine, stats);
  return stats;
}

void Engine::gather_rank_stats(const RankStats& mine, RunStats& stats) {
  const std::vector<double> row = {static_cast<double>(mine.events),
                                   static_cast<double>(mine.sent_remote),
                                   static_cast<double>(mine.sent_other_lp),
                                   static_cast<double>(mine.peak_pending),
                                   static_cast<double>(mine.queue_bytes),
                                   mine.compute_s,
                                   mine.exchange_s,
                                   mine.allreduce_s,
                                   mine.thread_imbalance,
                                   static_cast<double>(mine.peak_rss),
                                   static_cast<double>(mine.lps),
                                   stats.wall_s,
                                   mine.hook_s};
  const std::vector<double> all = sync_.gather(row);
  if (all.empty()) {
    stats.per_rank.push_back(mine);
    return;
  }
  for (int r = 0; r < sync_.size(); ++r) {
    const double* x = all.data() + static_cast<std::size_t>(r) * row.size();
    RankStats rs;
    rs.rank = r;
    rs.events = static_cast<std::uint64_t>(x[0]);
    rs.sent_remote = static_cast<std::uint64_t>(x[1]);
    rs.sent_other_lp = static_cast<std::uint64_t>(x[2]);
    rs.peak_pending = static_cast<std::uint64_t>(x[3]);
    rs.queue_bytes = static_cast<std::uint64_t>(x[4]);
    rs.compute_s = x[5];
    rs.exchange_s = x[6];
    rs.allreduce_s = x[7];
    rs.thread_imbalance = x[8];
    rs.peak_rss = static_cast<std::int64_t>(x[9]);
    rs.lps = static_cast<int>(x[10]);
    stats.wall_s = std::max(stats.wall_s, x[11]);
    rs.hook_s = x[12];
    stats.per_rank.push_back(rs);
  }
}

void Engine::fill_digest(Model& model, RunStats& stats) {
  // Sum (mod 2^64) of per-LP and per-pending-event hashes: independent of which rank holds what.
  std::vector<std::uint64_t> terms;
  terms.reserve(local_lps_.size());
  for (std::uint32_t s = 0; s < local_lps_.size(); ++s) {
    terms.push_back(mix64(hash_combine(local_lps_[s], model.lp_digest(s))));
  }
  for (auto& wk : workers_) {
    wk->for_each_pending([&](const Event& ev) {
      std::uint64_t h = hash_combine(static_cast<std::uint64_t>(ev.time.picoseconds()), ev.dst);
      h = hash_combine(h, (static_cast<std::uint64_t>(ev.src) << 32) | ev.kind);
      h = hash_combine(h, ev.seq);
      terms.push_back(mix64(hash_combine(h, ev.aux)));
    });
  }
  std::uint64_t d = kernels::sum_u64(terms);
  sync_.allreduce_sum(std::span<std::uint64_t>(&d, 1));
  stats.digest = d;
}

}  // namespace stepsim::pdes
