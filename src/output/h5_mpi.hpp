#pragma once
// The HDF5 writers' view of MPI (private to src/output/): the writers gather every row to rank 0,
// which writes the file alone through HDF5's POSIX (sec2) driver; the other ranks make no HDF5
// call. Rank 0's outcome is then broadcast, so every rank returns the same result (parallel
// HDF5's collective metadata writes could leave a rank waiting in a call another had left, on a
// full disk). The file is the same for any number of ranks.

#include <mpi.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <hdf5.h>

#include "stepsim/core/result.hpp"
#include "stepsim/pdes/mpi_sync.hpp"

namespace stepsim::output {

inline int comm_rank(MPI_Comm comm) {
  int rank = 0;
  if (pdes::mpi_running()) MPI_Comm_rank(comm, &rank);
  return rank;
}

inline int comm_size(MPI_Comm comm) {
  int ranks = 1;
  if (pdes::mpi_running()) MPI_Comm_size(comm, &ranks);
  return ranks;
}

/// What the system said of the last failed write (": No space left on device"), or "" when it
/// said nothing: HDF5's drivers leave the write's errno; clear errno before the calls.
inline std::string io_reason() {
  const int e = errno;
  return e != 0 ? std::string(": ") + std::strerror(e) : std::string();
}

/// The POSIX driver (rank 0 writes alone).
inline void set_file_driver(hid_t fapl) {
  H5Pset_fapl_sec2(fapl);
}

/// A dataset creation property list without the creation and modification times HDF5 would
/// store in each dataset's header: the same run writes the same bytes (but /meta@wall_s) at any
/// time. Space is allocated as the rows are written (no chunks of fill values first).
inline hid_t dataset_create_plist() {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, false);
  return dcpl;
}

/// Rank 0's `mine` on every rank of `comm` (one broadcast of its outcome and, on failure, its
/// message); collective. The other ranks' `mine` is ignored.
inline Result<bool> agree_with_writer(const Result<bool>& mine, MPI_Comm comm) {
  if (comm_size(comm) == 1) return mine;
  const bool writer = comm_rank(comm) == 0;
  int len = -1;
  if (writer && !mine) len = static_cast<int>(mine.error().message.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  if (len < 0) return true;
  std::string message =
      writer ? mine.error().message : std::string(static_cast<std::size_t>(len), ' ');
  if (len > 0) MPI_Bcast(message.data(), len, MPI_CHAR, 0, comm);
  return Error{message};
}

}  // namespace stepsim::output
