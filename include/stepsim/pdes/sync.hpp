#pragma once
/// The engine's only view of other ranks: event exchange between neighbouring ranks and a few
/// collectives. SerialSync is the one-rank case; MpiSync (mpi_sync.hpp) the distributed one.

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

/// Inter-rank communication used by the engine, once per window at most.
class Sync {
 public:
  virtual ~Sync() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Declares the ranks this rank exchanges events with. Must be symmetric across ranks.
  virtual void set_neighbours(std::span<const int> ranks) = 0;
  /// Sends out[i] to neighbour i (as given to set_neighbours) and appends everything the
  /// neighbours sent to `in`. Every neighbour takes part, even with nothing to send.
  virtual void exchange(std::span<std::vector<Event>> out, std::vector<Event>& in) = 0;
  /// exchange() and then allreduce_min(values) (at most kMaxFusedValues values), in one round
  /// where the transport allows it (MpiSync through shared memory, or when every other rank is
  /// a neighbour with the values in the event messages; the engine's one synchronisation per
  /// window).
  virtual void exchange_min(std::span<std::vector<Event>> out, std::vector<Event>& in,
                            std::span<std::int64_t> values) {
    exchange(out, in);
    allreduce_min(values);
  }
  static constexpr std::size_t kMaxFusedValues = 8;
  /// Element-wise minimum over ranks, in place.
  virtual void allreduce_min(std::span<std::int64_t> values) = 0;
  /// Element-wise sum (mod 2^64) over ranks, in place.
  virtual void allreduce_sum(std::span<std::uint64_t> values) = 0;
  /// Every rank's `mine` (same length on all ranks), concatenated in rank order, on rank 0;
  /// empty on the other ranks.
  virtual std::vector<double> gather(std::span<const double> mine) = 0;

  /// Every rank's records `mine` (trivially copyable; any count on each rank), concatenated in
  /// rank order, on every rank: the records each rank owns (a trace's rows, found on its servers
  /// only), so the result does not depend on how LPs were spread over the ranks once the caller
  /// sorts it. Over allreduce_sum; called at the end of a run, not per event.
  template <class T>
  std::vector<T> all_gather(const std::vector<T>& mine);
  /// all_gather of 64-bit words: each rank's words at their place and zeros elsewhere, summed
  /// over the ranks.
  std::vector<std::uint64_t> all_gather_words(const std::vector<std::uint64_t>& mine);
};

template <class T>
std::vector<T> Sync::all_gather(const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  constexpr std::size_t kWords = (sizeof(T) + 7) / 8;
  std::vector<std::uint64_t> words(mine.size() * kWords, 0);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(&words[i * kWords], static_cast<const void*>(&mine[i]), sizeof(T));
  }
  const std::vector<std::uint64_t> all = all_gather_words(words);
  std::vector<T> out(all.size() / kWords);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::memcpy(static_cast<void*>(&out[i]), &all[i * kWords], sizeof(T));
  }
  return out;
}

/// One rank, no communication.
class SerialSync final : public Sync {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  void set_neighbours(std::span<const int> ranks) override;
  void exchange(std::span<std::vector<Event>> out, std::vector<Event>& in) override;
  void allreduce_min(std::span<std::int64_t>) override {}
  void allreduce_sum(std::span<std::uint64_t>) override {}
  std::vector<double> gather(std::span<const double> mine) override {
    return {mine.begin(), mine.end()};
  }
};

}  // namespace stepsim::pdes
