#pragma once
/// MPI implementation of Sync, and the MPI session (init, finalize, abort on fatal errors).
/// Every MPI call of the engine lives in src/pdes/mpi_sync.cpp.

#include <memory>
#include <string>

#include "stepsim/pdes/sync.hpp"

namespace stepsim::pdes {

/// MPI for the lifetime of the object: MPI_Init_thread (FUNNELED: only the master thread of a
/// rank calls MPI) and MPI_Finalize. Installs a fatal-error handler that calls MPI_Abort.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  /// Synchronises all ranks (MPI_Barrier).
  void barrier() const;
  /// True on rank 0, the rank that prints.
  [[nodiscard]] bool is_root() const { return rank_ == 0; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

/// True on every rank when `ok` is true on every rank of MPI_COMM_WORLD (a logical-and
/// allreduce; just `ok` when MPI is not running). Checks that a rank may see differently (a
/// file system, a node's memory) agree through it, so that no rank goes on alone.
bool all_ranks_ok(bool ok);

/// Sync over MPI_COMM_WORLD: sparse point-to-point exchange with neighbour ranks only.
class MpiSync final : public Sync {
 public:
  MpiSync();
  ~MpiSync() override;
  [[nodiscard]] int rank() const override;
  [[nodiscard]] int size() const override;
  void set_neighbours(std::span<const int> ranks) override;
  void exchange(std::span<std::vector<Event>> out, std::vector<Event>& in) override;
  void exchange_min(std::span<std::vector<Event>> out, std::vector<Event>& in,
                    std::span<std::int64_t> values) override;
  void allreduce_min(std::span<std::int64_t> values) override;
  void allreduce_sum(std::span<std::uint64_t> values) override;
  std::vector<double> gather(std::span<const double> mine) override;

 private:
  // Appends what the neighbours sent to `in`; with `trailer_min` non-empty, each message's last
  // event is the sender's trailer (exchange_min), taken off and min-reduced into trailer_min.
  void exchange_impl(std::span<std::vector<Event>> out, std::vector<Event>& in,
                     std::span<std::int64_t> trailer_min);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepsim::pdes
