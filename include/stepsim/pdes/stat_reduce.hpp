#pragma once
/// Reduction over MPI ranks of declared statistics (core/stat_table.hpp): every rank passes the
/// same records, those it does not own at their defaults (the reductions' identities), and gets
/// every statistic reduced as its table declares. Sums go through one allreduce_sum, maxima and
/// minima through one allreduce_min (a maximum as the minimum of ~x); integers only, so the result
/// does not depend on the ranks. Called once at the end of a run, not per packet.

#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/core/stat_table.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::stat {

namespace impl {

template <class S>
constexpr std::size_t sums() {
  std::size_t n = 0;
  for (const Stat<S>& f : table<S>()) n += f.reduce == Reduce::kSum ? 1 : 0;
  return n;
}

// Order-preserving maps to a minimum: max as ~x, min with -1 (none) as the largest value.
constexpr std::int64_t to_min(Reduce r, std::int64_t v) {
  if (r == Reduce::kMax) return ~v;
  return v < 0 ? INT64_MAX : v;
}
constexpr std::int64_t from_min(Reduce r, std::int64_t v) {
  if (r == Reduce::kMax) return ~v;
  return v == INT64_MAX ? -1 : v;
}

}  // namespace impl

/// Reduces `records` (the same count on every rank) over the ranks of `sync`, in place.
template <class S>
void allreduce(pdes::Sync& sync, std::span<S> records) {
  static_assert(defaults_are_identities<S>(),
                "a statistic's default must be its reduction's identity (sum 0, min -1)");
  if (sync.size() == 1 || records.empty()) return;
  constexpr auto t = table<S>();
  constexpr std::size_t ns = impl::sums<S>();
  constexpr std::size_t nm = t.size() - ns;
  std::vector<std::uint64_t> sum(ns * records.size());
  std::vector<std::int64_t> mins(nm * records.size());
  std::size_t a = 0;
  std::size_t b = 0;
  for (const S& r : records) {
    for (const Stat<S>& f : t) {
      if (f.reduce == Reduce::kSum) {
        sum[a++] = f.bits(r);
      } else {
        mins[b++] = impl::to_min(f.reduce, f.value(r));
      }
    }
  }
  if (ns > 0) sync.allreduce_sum(sum);
  if (nm > 0) sync.allreduce_min(mins);
  a = b = 0;
  for (S& r : records) {
    for (const Stat<S>& f : t) {
      if (f.reduce == Reduce::kSum) {
        f.set(r, static_cast<std::int64_t>(sum[a++]));
      } else {
        f.set(r, impl::from_min(f.reduce, mins[b++]));
      }
    }
  }
}

template <class S>
void allreduce(pdes::Sync& sync, std::vector<S>& records) {
  allreduce(sync, std::span<S>(records));
}

/// Values each set on one rank only (0 on the others), gathered onto every rank in place.
inline void gather_owned(pdes::Sync& sync, std::span<std::int64_t> values) {
  if (sync.size() == 1 || values.empty()) return;
  std::vector<std::uint64_t> buf(values.begin(), values.end());
  sync.allreduce_sum(buf);
  for (std::size_t k = 0; k < buf.size(); ++k) values[k] = static_cast<std::int64_t>(buf[k]);
}

/// Times each set on one rank only (-1, "none", on the others), gathered onto every rank in
/// place (where several ranks set one, the earliest).
inline void gather_earliest(pdes::Sync& sync, std::span<std::int64_t> times) {
  if (sync.size() == 1 || times.empty()) return;
  for (std::int64_t& t : times) t = impl::to_min(Reduce::kMin, t);
  sync.allreduce_min(times);
  for (std::int64_t& t : times) t = impl::from_min(Reduce::kMin, t);
}

}  // namespace stepsim::stat
