#pragma once
// What the HDF5 writers share (private to src/output/): a whole 1-D table written by the writing
// rank (h5_mpi.hpp).

#include <hdf5.h>

#include "src/output/h5_mpi.hpp"

namespace stepsim::output {

/// Writes all rows of the 1-D dataset `ds` from `rows` (in memory type `type`).
inline bool write_block(hid_t ds, hid_t type, const void* rows) {
  return H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0;
}

}  // namespace stepsim::output
