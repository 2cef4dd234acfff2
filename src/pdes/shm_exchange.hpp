#pragma once
/// The window's synchronisation through shared memory, for MpiSync when every rank runs on one
/// node: each rank writes its events for a neighbour into a mailbox in a segment every rank of
/// the node maps (MPI_Win_allocate_shared), its values to reduce beside them, and publishes the
/// window by bumping a counter; the others wait for the counter (a bounded spin, then
/// sched_yield), take the minimum of every rank's values and copy their events out. One store
/// and one load per rank pair and window instead of an MPI message; batches larger than a
/// mailbox go by MPI. Every call is collective over MPI_COMM_WORLD.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

class ShmExchange {
 public:
  /// Values one exchange reduces at most.
  static constexpr std::size_t kMaxValues = 8;
  /// A shared segment for the ranks of MPI_COMM_WORLD if they all share a node, else null (on
  /// every rank alike). Collective.
  static std::unique_ptr<ShmExchange> create(int rank, int size);
  ~ShmExchange();
  ShmExchange(const ShmExchange&) = delete;
  ShmExchange& operator=(const ShmExchange&) = delete;

  /// Sends out[i] to neighbours[i], appends what the neighbours sent (in neighbour order) to
  /// `in`, and min-reduces `values` over every rank of the world (not only the neighbours).
  void exchange_min(std::span<const int> neighbours, std::span<std::vector<Event>> out,
                    std::vector<Event>& in, std::span<std::int64_t> values);

  /// Events a mailbox holds; a larger batch goes by MPI.
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  ShmExchange(int rank, int size, MPI_Win win, std::vector<std::byte*> bases, std::size_t capacity);
  struct Header;
  struct Mailbox;
  [[nodiscard]] Header& header(int rank) const;
  [[nodiscard]] Mailbox& mailbox(int from, int to, std::uint64_t parity) const;
  // Waits until `rank` has published window `epoch`.
  void wait_for(int rank, std::uint64_t epoch) const;

  int rank_;
  int size_;
  MPI_Win win_;
  std::vector<std::byte*> bases_;  // every rank's segment, mapped here
  std::size_t capacity_;
  std::uint64_t epoch_ = 0;
  std::vector<MPI_Request> overflow_;
};

}  // namespace stepsim::pdes
