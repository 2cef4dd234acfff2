#pragma once
// What the HDF5 writers share (private to src/output/): one rank's block of a 1-D table, written
// collectively.

#include <algorithm>
#include <cstddef>

#include <hdf5.h>

#include "src/output/h5_mpi.hpp"

namespace stepsim::output {

/// Writes rows [n * rank / ranks, n * (rank + 1) / ranks) of `rows` (all n rows, `row_bytes`
/// each, in memory type `type`) into the 1-D dataset `ds` of n rows, collectively (a rank with
/// no rows takes part with an empty selection).
inline bool write_block(hid_t ds, hid_t type, const void* rows, std::size_t row_bytes, hsize_t n,
                        int rank, int ranks) {
  const hsize_t lo = n * static_cast<hsize_t>(rank) / static_cast<hsize_t>(ranks);
  const hsize_t hi = n * static_cast<hsize_t>(rank + 1) / static_cast<hsize_t>(ranks);
  const hsize_t count = hi - lo;
  const hid_t fspace = H5Dget_space(ds);
  const hsize_t mcount = std::max<hsize_t>(count, 1);
  const hid_t mspace = H5Screate_simple(1, &mcount, nullptr);
  if (count > 0) {
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &lo, nullptr, &count, nullptr);
  } else {
    H5Sselect_none(fspace);
    H5Sselect_none(mspace);
  }
  const hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  set_collective(dxpl);
  const auto* first = static_cast<const unsigned char*>(rows) + (count > 0 ? lo * row_bytes : 0);
  const bool ok = H5Dwrite(ds, type, mspace, fspace, dxpl, first) >= 0;
  H5Pclose(dxpl);
  H5Sclose(mspace);
  H5Sclose(fspace);
  return ok;
}

}  // namespace stepsim::output
