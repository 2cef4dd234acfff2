#pragma once
// The HDF5 writers' view of MPI (private to src/output/): with MPI running, the MPI-IO file
// driver, collective transfers and the communicator's collectives; without it (a process no
// launcher started, which never initialises MPI), one rank of one, HDF5's POSIX (sec2) driver and
// independent transfers. Both write the same bytes for a one-rank run.

#include <mpi.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <hdf5.h>

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

/// MPI-IO over `comm` while MPI runs, else the POSIX driver.
inline void set_file_driver(hid_t fapl, MPI_Comm comm) {
  if (pdes::mpi_running()) {
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  } else {
    H5Pset_fapl_sec2(fapl);
  }
}

/// Collective MPI-IO transfers while MPI runs (the serial driver has only one kind).
inline void set_collective(hid_t dxpl) {
  if (pdes::mpi_running()) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
}

/// A dataset creation property list with the allocation parallel HDF5 forces (all of a dataset's
/// space when it is created), so that the POSIX driver lays the file out as MPI-IO does, and
/// without the creation and modification times HDF5 would store in each dataset's header: the
/// same run writes the same bytes (but /meta@wall_s) on any driver, at any time.
inline hid_t dataset_create_plist() {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
  H5Pset_obj_track_times(dcpl, false);
  return dcpl;
}

/// True when `ok` on every rank of `comm`.
inline bool all_ok(bool ok, MPI_Comm comm) {
  if (!pdes::mpi_running()) return ok;
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, comm);
  return v != 0;
}

}  // namespace stepsim::output
