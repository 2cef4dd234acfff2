#pragma once
/// A FIFO of plain values in a power-of-two ring that grows by doubling; no allocation per
/// element once warm.

#include <cstddef>
#include <vector>

namespace stepsim {

template <class T>
class RingQueue {
 public:
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return buf_.size(); }
  [[nodiscard]] const T& front() const { return buf_[head_]; }
  [[nodiscard]] T& front() { return buf_[head_]; }
  /// The i-th element from the front.
  [[nodiscard]] T& operator[](std::size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  [[nodiscard]] const T& operator[](std::size_t i) const {
    return buf_[(head_ + i) & (buf_.size() - 1)];
  }

  void push(const T& v) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  T pop() {
    T v = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
    return v;
  }
  void clear() { head_ = size_ = 0; }
  /// Visits the elements front to back.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < size_; ++i) f(buf_[(head_ + i) & (buf_.size() - 1)]);
  }

 private:
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 8 : buf_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    buf_.swap(bigger);
    head_ = 0;
  }
  std::vector<T> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace stepsim
