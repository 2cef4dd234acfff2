#include "src/pdes/worker.hpp"

#include <algorithm>
#include <chrono>

#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {

void LpContext::send_event(Event& ev) {
  worker_->route(self_, slot_, now_, ev);
}

Worker::Worker(Engine& engine, std::uint32_t id, std::uint32_t slot_begin, std::uint32_t slot_end,
               std::size_t workers, std::size_t neighbours)
    : to_worker(workers),
      to_rank(neighbours),
      engine_(engine),
      id_(id),
      slot_begin_(slot_begin),
      slot_end_(slot_end),
      rank_(engine.sync_.rank()),
      lp_lookahead_(engine.lp_lookahead_.data()),
      homes_(engine.homes_.data()),
      lps_(engine.local_lps_.data() + slot_begin),
      queues_(slot_end - slot_begin),
      next_(slot_end - slot_begin, SimTime::never()),
      seq_(slot_end - slot_begin, 0) {
  own_lookahead_.reserve(slot_end - slot_begin);
  for (std::uint32_t i = 0; i < slot_end - slot_begin; ++i)
    own_lookahead_.push_back(lp_lookahead_[lps_[i]]);
}

void Worker::reset() {
  for (EventQueue& q : queues_) q.clear();
  std::fill(next_.begin(), next_.end(), SimTime::never());
  std::fill(seq_.begin(), seq_.end(), 0);
  for (auto& v : to_worker) v.clear();
  for (auto& v : to_rank) v.clear();
  processed = sent_remote = sent_other_lp = 0;
  std::fill(kind_counts.begin(), kind_counts.end(), 0);
  compute_s = 0;
  top_in_flight_ = false;
  min_ = pushed_min_ = remote_min = SimTime::never();
  pending_ = 0;
  horizon_ = SimTime::zero();
}

void Worker::set_probe(std::uint32_t probes, const std::vector<std::uint32_t>& slots, LpId lps,
                       std::size_t counters) {
  probes_ = probes;
  probe_counts.assign(counters, 0);
  probe_slot_.clear();
  for (std::uint32_t i = 0; i < lp_count(); ++i) {
    for (std::uint32_t c = 0; c < probes; ++c) probe_slot_.push_back(slots[c * lps + lps_[i]]);
  }
}

void Worker::init_lps(Model& model) {
  for (std::uint32_t i = 0; i < lp_count(); ++i) {
    LpContext ctx(this, lps_[i], slot_begin_ + i, SimTime::zero());
    model.init_lp(ctx);
  }
  SimTime m = SimTime::never();
  for (std::uint32_t i = 0; i < lp_count(); ++i) {
    next_[i] = queues_[i].next_time();
    m = std::min(m, next_[i]);
  }
  min_ = std::min(m, pushed_min_);
  pushed_min_ = SimTime::never();
}

void Worker::process_window(Model& model, SimTime g, SimTime end) {
  // Only the thread imbalance reads compute_s: one worker is not timed (two clock reads per
  // window).
  const bool timed = engine_.workers_.size() > 1;
  const auto t0 =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  SimTime scan_min = SimTime::never();
  pushed_min_ = SimTime::never();
  const std::uint32_t n = lp_count();
  SimTime* next = next_.data();
  std::uint64_t done = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const SimTime window_end = std::min(g.saturating_add(own_lookahead_[i]), end);
    if (next[i] < window_end) {
      EventQueue& q = queues_[i];
      LpContext ctx(this, lps_[i], slot_begin_ + i, SimTime::zero());
      const std::uint64_t before = done;
      do {
        const Event ev = q.top();
        ctx.now_ = ev.time;
        if (!kind_counts.empty()) [[unlikely]]
          ++kind_counts[std::min(ev.kind, kKindCounters - 1)];
        top_in_flight_ = true;
        model.handle(ctx, ev);
        if (top_in_flight_) q.pop();  // no self-send took its place
        ++done;
      } while (!q.empty() && q.top().time < window_end);
      top_in_flight_ = false;
      // An LP without channels runs to the end in one window: it does not set where a stop ends.
      if (!own_lookahead_[i].is_never()) horizon_ = std::max(horizon_, ctx.now_);
      next[i] = q.next_time();
      for (std::uint32_t c = 0; c < probes_; ++c)
        probe_counts[probe_slot_[i * probes_ + c]] += done - before;
    }
    scan_min = std::min(scan_min, next[i]);
  }
  processed += done;
  pending_ -= done;
  min_ = std::min(scan_min, pushed_min_);
  if (timed)
    compute_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Worker::deliver(std::vector<Event>& box) {
  for (const Event& ev : box) {
    const std::uint32_t i = homes_[ev.dst].slot - slot_begin_;
    queues_[i].push(ev);
    next_[i] = std::min(next_[i], ev.time);
    min_ = std::min(min_, ev.time);
  }
  pending_ += box.size();
  box.clear();
}

void Worker::route(LpId src, std::uint32_t src_slot, SimTime now, Event& ev) {
  ev.src = src;
  ev.seq = seq_[src_slot - slot_begin_]++;
  if (ev.dst == src) [[likely]] {
    if (ev.time < now) [[unlikely]]
      lookahead_violation(src, now, ev);
    EventQueue& q = queues_[src_slot - slot_begin_];
    if (top_in_flight_) {
      q.replace_top(ev);
      top_in_flight_ = false;
    } else {
      q.push(ev);
    }
    ++pending_;
    return;
  }
  if (ev.dst >= engine_.graph_.size() || ev.time < now || ev.time - now < lp_lookahead_[ev.dst])
      [[unlikely]] {
    lookahead_violation(src, now, ev);
  }
  const Engine::Home& h = homes_[ev.dst];
  if (h.rank == rank_) {
    ++sent_other_lp;
    if (h.worker == id_) {
      const std::uint32_t i = h.slot - slot_begin_;
      queues_[i].push(ev);
      next_[i] = std::min(next_[i], ev.time);
      pushed_min_ = std::min(pushed_min_, ev.time);
      ++pending_;
    } else {
      to_worker[h.worker].push_back(ev);
    }
    return;
  }
  const std::int32_t nb = engine_.neighbour_index_[static_cast<std::size_t>(h.rank)];
  if (nb < 0) [[unlikely]] {
    fatal("LP " + std::to_string(src) + " (rank " + std::to_string(rank_) +
          ") sent an event to LP " + std::to_string(ev.dst) + " (rank " + std::to_string(h.rank) +
          ") but no channel of the LP graph '" + engine_.graph_.name() +
          "' connects their ranks; declare the channel in the graph");
  }
  ++sent_remote;
  remote_min = std::min(remote_min, ev.time);
  to_rank[static_cast<std::size_t>(nb)].push_back(ev);
}

void Worker::lookahead_violation(LpId src, SimTime now, const Event& ev) const {
  if (ev.dst >= engine_.graph_.size()) {
    fatal("LP " + std::to_string(src) + " sent an event to LP " + std::to_string(ev.dst) +
          ", which does not exist (the graph has " + std::to_string(engine_.graph_.size()) +
          " LPs)");
  }
  const int dst_rank = engine_.owner_[ev.dst];
  const SimTime la = ev.dst == src ? SimTime::zero() : lp_lookahead_[ev.dst];
  std::string what = ev.time < now ? "into the past" : "with a delay below the lookahead";
  fatal("lookahead violation: LP " + std::to_string(src) + " (rank " + std::to_string(rank_) +
        ") at time " + to_string(now) + " sent an event " + what + " to LP " +
        std::to_string(ev.dst) + " (rank " + std::to_string(dst_rank) + ") for time " +
        to_string(ev.time) + ": delay " + to_string(ev.time - now) + " < lookahead " +
        to_string(la) + " (the smallest latency of LP " + std::to_string(ev.dst) +
        "'s channels in '" + engine_.graph_.name() + "')");
}

std::uint64_t Worker::storage_bytes() const {
  std::uint64_t n = 0;
  for (const auto& v : to_worker) n += v.capacity();
  for (const auto& v : to_rank) n += v.capacity();
  std::uint64_t bytes = n * sizeof(Event) + queues_.capacity() * sizeof(EventQueue) +
                        next_.capacity() * sizeof(SimTime) +
                        seq_.capacity() * sizeof(std::uint64_t);
  for (const EventQueue& q : queues_) bytes += q.storage_bytes();
  return bytes;
}

}  // namespace stepsim::pdes
