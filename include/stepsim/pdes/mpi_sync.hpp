#pragma once
/// MPI implementation of Sync, and the MPI session (init, finalize, abort on fatal errors).
/// Every MPI call of the engine lives in src/pdes/mpi_sync.cpp and src/pdes/shm_exchange.cpp.

#include <memory>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::pdes {

/// Where this process stands in a parallel job, read from the environment a launcher sets
/// before the program starts, without initialising MPI: Open MPI's mpirun/mpiexec
/// (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), a PMIx server such as PRRTE or
/// `srun --mpi=pmix` (PMIX_RANK), a PMI-1/2 launcher such as MPICH's Hydra or
/// `srun --mpi=pmi2` (PMI_RANK, PMI_SIZE) and Slurm's srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS
/// or SLURM_NTASKS). Not launched: none of them set, one process, rank 0 of 1.
struct Launch {
  bool launched = false;
  int rank = 0;
  int size = 1;  // 1 where the launcher says only its rank (PMIx)
};
[[nodiscard]] Launch launch_from_environment();

/// MPI for the lifetime of the object, started on demand: MPI_Init_thread (FUNNELED: only the
/// master thread of a rank calls MPI) at construction (Start::now) or at the first start()
/// (Start::lazy), MPI_Finalize at destruction if it was started. Installs a fatal-error handler
/// that calls MPI_Abort. Before MPI starts, rank() and size() are the launcher's
/// (launch_from_environment()).
class MpiSession {
 public:
  enum class Start { now, lazy };
  MpiSession(int* argc, char*** argv, Start when = Start::now);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  /// Initialises MPI unless it is already (no-op then).
  void start();
  [[nodiscard]] bool started() const { return started_; }
  /// True when a launcher started this process (launch_from_environment()).
  [[nodiscard]] bool launched() const { return launch_.launched; }
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  /// Synchronises all ranks (MPI_Barrier; nothing before start()).
  void barrier() const;
  /// True on rank 0, the rank that prints.
  [[nodiscard]] bool is_root() const { return rank_ == 0; }

 private:
  int* argc_;
  char*** argv_;
  Launch launch_;
  bool started_ = false;
  int rank_ = 0;
  int size_ = 1;
};

/// True while MPI is initialised and not finalised.
[[nodiscard]] bool mpi_running();

/// The engine's transport for this process: MpiSync over MPI_COMM_WORLD while MPI runs,
/// SerialSync (one rank, no MPI) otherwise.
[[nodiscard]] std::unique_ptr<Sync> make_sync();

/// True on every rank when `ok` is true on every rank of MPI_COMM_WORLD (a logical-and
/// allreduce; just `ok` when MPI is not running). Checks that a rank may see differently (a
/// file system, a node's memory) agree through it, so that no rank goes on alone.
bool all_ranks_ok(bool ok);

/// How MpiSync synchronises the engine's windows, from the environment variable STEPSIM_SYNC:
/// `shm` (also when unset or empty) through memory shared by the ranks when every rank runs on
/// one node, by MPI messages otherwise; `mpi` by MPI messages always. Results are the same
/// either way. Anything else is an error naming the allowed values.
enum class SyncTransport { shm, mpi };
[[nodiscard]] Result<SyncTransport> sync_transport_from_environment();

/// Sync over MPI_COMM_WORLD: sparse point-to-point exchange with neighbour ranks only; the
/// engine's per-window exchange_min through shared memory where SyncTransport allows.
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
  /// True once set_neighbours chose the shared-memory path (same on every rank).
  [[nodiscard]] bool shared_memory() const;

 private:
  // Appends what the neighbours sent to `in`; with `trailer_min` non-empty, each message's last
  // event is the sender's trailer (exchange_min), taken off and min-reduced into trailer_min.
  void exchange_impl(std::span<std::vector<Event>> out, std::vector<Event>& in,
                     std::span<std::int64_t> trailer_min);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepsim::pdes
