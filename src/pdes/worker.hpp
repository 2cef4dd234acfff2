#pragma once
// One thread's share of a rank's LPs: their event queues, the window loop over them, and the
// outboxes for events to other threads and ranks. Private to the engine.

#include <cstdint>
#include <vector>

#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/event_queue.hpp"

namespace stepsim::pdes {

class Worker {
 public:
  Worker(Engine& engine, std::uint32_t id, std::uint32_t slot_begin, std::uint32_t slot_end,
         std::size_t workers, std::size_t neighbours);

  /// Forgets everything of a previous run (keeps allocated storage).
  void reset();
  /// Counts each window's events under `probes` other partitions too: `slots[c * lps + v]` is
  /// the counter (into probe_counts, `counters` long) of LP v under partition c.
  void set_probe(std::uint32_t probes, const std::vector<std::uint32_t>& slots, LpId lps,
                 std::size_t counters);
  /// Runs Model::init_lp on every LP of this worker (time 0).
  void init_lps(Model& model);
  /// Processes, LP by LP, every event that no other LP can still precede: those before
  /// g + (the LP's own lookahead: the smallest latency of its incoming channels), and before end.
  void process_window(Model& model, SimTime g, SimTime end);
  /// Moves events for this worker's LPs from `box` into their queues and empties `box`.
  void deliver(std::vector<Event>& box);
  /// Where an event sent from a handler goes: own queue, another worker, another rank.
  void route(LpId src, std::uint32_t src_slot, SimTime now, Event& ev);

  /// Earliest pending event time of this worker's LPs (valid after deliveries).
  [[nodiscard]] SimTime next_time() const { return min_; }
  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] std::uint32_t lp_count() const { return slot_end_ - slot_begin_; }
  [[nodiscard]] std::uint64_t pending() const { return pending_; }
  /// Latest time of an event processed so far by an LP with channels (zero before the first).
  [[nodiscard]] SimTime horizon() const { return horizon_; }
  /// Bytes of event storage held (queues and outboxes).
  [[nodiscard]] std::uint64_t storage_bytes() const;
  /// Visits every pending event (for digests).
  template <class F>
  void for_each_pending(F&& f) const {
    for (const EventQueue& q : queues_) q.for_each(f);
  }

  std::vector<std::vector<Event>> to_worker;  ///< by destination worker, this window
  std::vector<std::vector<Event>> to_rank;    ///< by neighbour index, this window
  SimTime remote_min = SimTime::never();      ///< earliest event in to_rank (reset by the engine)
  std::uint64_t processed = 0;
  /// STEPSIM_PARTITION_PROBE: this window's events by (probed partition, part), or empty.
  std::vector<std::uint64_t> probe_counts;
  std::uint64_t sent_remote = 0;
  std::uint64_t sent_other_lp = 0;
  double compute_s = 0;
  /// STEPSIM_WINDOW_STATS: events processed by kind (kinds above the last share its counter).
  static constexpr std::uint32_t kKindCounters = 128;
  std::vector<std::uint64_t> kind_counts;  ///< empty unless counting

 private:
  [[noreturn]] void lookahead_violation(LpId src, SimTime now, const Event& ev) const;

  Engine& engine_;
  std::uint32_t id_;
  std::uint32_t slot_begin_;
  std::uint32_t slot_end_;
  std::int32_t rank_;
  const SimTime* lp_lookahead_;         // by global LP
  std::vector<SimTime> own_lookahead_;  // by local index
  const Engine::Home* homes_;
  const LpId* lps_;  // global id per local index
  // STEPSIM_PARTITION_PROBE: by local index, the counter of each probed partition's part.
  std::vector<std::uint32_t> probe_slot_;
  std::uint32_t probes_ = 0;
  std::vector<EventQueue> queues_;
  std::vector<SimTime> next_;  // queues_[i].next_time(), dense for the scan
  std::vector<std::uint64_t> seq_;
  // While a handler runs, the event it handles is still the top of its LP's queue: the first
  // event the LP sends to itself replaces it (one sift instead of a pop and a push).
  bool top_in_flight_ = false;
  SimTime min_ = SimTime::never();
  SimTime pushed_min_ = SimTime::never();
  std::uint64_t pending_ = 0;
  SimTime horizon_ = SimTime::zero();
};

}  // namespace stepsim::pdes
