#pragma once
// Declared statistics (core/stat_table.hpp) as JSON: one key per statistic, its declared name.

#include <nlohmann/json.hpp>

#include "stepsim/core/stat_table.hpp"

namespace stepsim::cli {

/// {"name": value, ...} for every statistic of `s`, in table order (signed ones as signed).
template <class S>
nlohmann::json stat_json(const S& s) {
  nlohmann::json j = nlohmann::json::object();
  stat::for_each<S>([&](const stat::Stat<S>& f) {
    if (f.is_signed()) {
      j[f.name] = f.value(s);
    } else {
      j[f.name] = f.bits(s);
    }
  });
  return j;
}

}  // namespace stepsim::cli
