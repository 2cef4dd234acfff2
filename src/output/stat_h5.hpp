#pragma once
// Declared statistics (core/stat_table.hpp) as HDF5 compound columns: one 64-bit integer column
// per statistic, its declared name, at the statistic's place in a row that holds the struct.

#include <hdf5.h>

#include <cstddef>
#include <vector>

#include "stepsim/core/stat_table.hpp"

namespace stepsim::output {

/// Appends a column {name, offset, type} for every statistic of S, in table order, to `fields`;
/// the struct sits at byte `base` of the row. `Field` is the writer's column type.
template <class S, class Field>
void add_stat_columns(std::vector<Field>& fields, std::size_t base) {
  const S probe{};
  const auto* at = reinterpret_cast<const unsigned char*>(&probe);
  stat::for_each<S>([&](const stat::Stat<S>& f) {
    const void* m = f.is_signed() ? static_cast<const void*>(&(probe.*f.i))
                                  : static_cast<const void*>(&(probe.*f.u));
    const auto offset = static_cast<std::size_t>(static_cast<const unsigned char*>(m) - at);
    fields.push_back(
        Field{f.name, base + offset, f.is_signed() ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64});
  });
}

}  // namespace stepsim::output
