#pragma once
/// Per-LP pending-event set: an implicit 4-ary min-heap of events under event_before(), on
/// cache-line aligned storage.

#include <cstddef>
#include <new>
#include <vector>

#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

/// Pending events of one LP, smallest (earliest) on top. Storage grows geometrically and is
/// reused; no allocation per event once warm.
class EventQueue {
 public:
  [[nodiscard]] bool empty() const { return heap_.size() == kPad; }
  [[nodiscard]] std::size_t size() const { return heap_.size() - kPad; }
  [[nodiscard]] const Event& top() const { return heap_[kPad]; }
  /// Time of the earliest event, or SimTime::never() when empty.
  [[nodiscard]] SimTime next_time() const { return empty() ? SimTime::never() : heap_[kPad].time; }

  void push(const Event& ev) {
    heap_.push_back(ev);
    Event* h = heap_.data() + kPad;
    std::size_t hole = heap_.size() - kPad - 1;
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / kArity;
      if (!event_before(ev, h[parent])) break;
      h[hole] = h[parent];
      hole = parent;
    }
    h[hole] = ev;
  }

  /// Drops every event (keeps the storage).
  void clear() { heap_.resize(kPad); }

  /// Removes the top event and returns it.
  Event pop() {
    Event out = heap_[kPad];
    const Event last = heap_.back();
    heap_.pop_back();
    if (!empty()) sift_down_from_root(last);
    return out;
  }

  /// Removes the top event and inserts `ev` in one pass (pop followed by push, cheaper).
  void replace_top(const Event& ev) { sift_down_from_root(ev); }

  /// Visits every pending event, in heap (not time) order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = kPad; i < heap_.size(); ++i) f(heap_[i]);
  }

  /// Bytes of storage held.
  [[nodiscard]] std::size_t storage_bytes() const { return heap_.capacity() * sizeof(Event); }

 private:
  static constexpr std::size_t kArity = 4;
  // Node i lives at heap_[i + kPad]: the children of node i (4i + 1 ... 4i + 4) start at a
  // multiple of 4, so each group of siblings is 256 aligned bytes.
  static constexpr std::size_t kPad = kArity - 1;

  template <class T>
  struct LineAllocator {
    using value_type = T;
    LineAllocator() = default;
    template <class U>
    explicit LineAllocator(const LineAllocator<U>& /*other*/) {}
    T* allocate(std::size_t n) {
      return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{256}));
    }
    void deallocate(T* p, std::size_t /*n*/) { ::operator delete (p, std::align_val_t{256}); }
    bool operator==(const LineAllocator& /*other*/) const { return true; }
  };

  // Fills the hole at the root with `ev`, moving smaller children up.
  void sift_down_from_root(const Event& ev) {
    Event* h = heap_.data() + kPad;
    const std::size_t n = heap_.size() - kPad;
    std::size_t hole = 0;
    for (;;) {
      const std::size_t c = kArity * hole + 1;
      std::size_t best;
      if (c + 3 < n) [[likely]] {
        const std::size_t a = event_before(h[c + 1], h[c]) ? c + 1 : c;
        const std::size_t b = event_before(h[c + 3], h[c + 2]) ? c + 3 : c + 2;
        best = event_before(h[b], h[a]) ? b : a;
      } else {
        if (c >= n) break;
        best = c;
        for (std::size_t k = c + 1; k < n; ++k) {
          if (event_before(h[k], h[best])) best = k;
        }
      }
      if (!event_before(h[best], ev)) break;
      h[hole] = h[best];
      hole = best;
    }
    h[hole] = ev;
  }

  std::vector<Event, LineAllocator<Event>> heap_ = std::vector<Event, LineAllocator<Event>>(kPad);
};

}  // namespace stepsim::pdes
