#pragma once
/// Per-LP pending-event set: an implicit binary min-heap under event_before().

#include <cstddef>
#include <vector>

#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

/// Pending events of one LP, smallest (earliest) on top. Storage grows geometrically and is
/// reused; no allocation per event once warm.
class EventQueue {
 public:
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  [[nodiscard]] std::size_t capacity() const { return heap_.capacity(); }
  [[nodiscard]] const Event& top() const { return heap_.front(); }
  /// Time of the earliest event, or SimTime::never() when empty.
  [[nodiscard]] SimTime next_time() const {
    return heap_.empty() ? SimTime::never() : heap_.front().time;
  }

  void push(const Event& ev) {
    heap_.push_back(ev);
    std::size_t hole = heap_.size() - 1;
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!event_before(ev, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = ev;
  }

  /// Drops every event (keeps the storage).
  void clear() { heap_.clear(); }

  /// Removes the top event and returns it.
  Event pop() {
    Event out = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down_from_root(last);
    return out;
  }

  /// Removes the top event and inserts `ev` in one pass (pop followed by push, cheaper).
  void replace_top(const Event& ev) { sift_down_from_root(ev); }

  /// All pending events, in heap (not time) order.
  [[nodiscard]] const std::vector<Event>& raw() const { return heap_; }

 private:
  // Fills the hole at the root with `ev`, moving smaller children up.
  void sift_down_from_root(const Event& ev) {
    const std::size_t n = heap_.size();
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child >= n) break;
      if (child + 1 < n && event_before(heap_[child + 1], heap_[child])) ++child;
      if (!event_before(heap_[child], ev)) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = ev;
  }

  std::vector<Event> heap_;
};

}  // namespace stepsim::pdes
