#pragma once
/// Statistics declared once. A counter struct's fields each get one line of a table (name, unit,
/// reduction, member, whether the run digest hashes it); from that table come the combination of
/// records (combine), the digest feed (digest), the reduction over MPI ranks
/// (pdes/stat_reduce.hpp), the JSON object (cli/stat_json.hpp) and HDF5 columns
/// (output/stat_h5.hpp). The table is a constexpr function found by argument-dependent lookup,
/// next to the struct:
///
///   struct LinkStats {
///     std::uint64_t bytes = 0;
///     std::int64_t first_drop_ps = -1;
///   };
///   constexpr auto stat_table(std::type_identity<LinkStats>) {
///     using S = LinkStats;
///     return std::array{stat::sum("bytes", "B", &S::bytes, stat::kDigest),
///                       stat::min("first_drop_ps", "ps", &S::first_drop_ps)};
///   }
///
/// Defaults are the reductions' identities, so a record that a rank does not own holds the
/// default and reductions need no mask: a sum's default is 0, a min's is -1 ("none", which min
/// ignores: the earliest time), a max's is at most every value it takes (-1 for "never").

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "stepsim/core/hash.hpp"

namespace stepsim::stat {

/// How two values of one statistic combine (two records, or one record over MPI ranks).
enum class Reduce : std::uint8_t { kSum, kMax, kMin };

/// The digest flag of stat().
inline constexpr bool kDigest = true;

/// One statistic of the counter struct S: a 64-bit member, unsigned or signed.
template <class S>
struct Stat {
  const char* name = "";  ///< JSON key and HDF5 column
  const char* unit = "";  ///< "B", "ps", "" (a count)
  Reduce reduce = Reduce::kSum;
  std::uint64_t S::*u = nullptr;  ///< the member, when unsigned
  std::int64_t S::*i = nullptr;   ///< the member, when signed
  bool digest = false;            ///< hashed into the run digest, in table order

  /// The value as 64 bits (two's complement for signed members).
  [[nodiscard]] constexpr std::uint64_t bits(const S& s) const {
    return u != nullptr ? s.*u : static_cast<std::uint64_t>(s.*i);
  }
  [[nodiscard]] constexpr std::int64_t value(const S& s) const {
    return u != nullptr ? static_cast<std::int64_t>(s.*u) : s.*i;
  }
  constexpr void set(S& s, std::int64_t v) const {
    if (u != nullptr) {
      s.*u = static_cast<std::uint64_t>(v);
    } else {
      s.*i = v;
    }
  }
  [[nodiscard]] constexpr bool is_signed() const { return i != nullptr; }
};

/// A summed counter or amount.
template <class S, class V>
constexpr Stat<S> sum(const char* name, const char* unit, V S::*m, bool digest = false) {
  Stat<S> s{name, unit, Reduce::kSum};
  if constexpr (std::is_same_v<V, std::uint64_t>) {
    s.u = m;
  } else {
    static_assert(std::is_same_v<V, std::int64_t>, "statistics are 64-bit integers");
    s.i = m;
  }
  s.digest = digest;
  return s;
}
/// A maximum (a peak, the latest time; -1 for "never" is below every time).
template <class S, class V>
constexpr Stat<S> max(const char* name, const char* unit, V S::*m, bool digest = false) {
  Stat<S> s = sum(name, unit, m, digest);
  s.reduce = Reduce::kMax;
  return s;
}
/// A minimum of a signed value where -1 means "none" (the earliest time): -1 loses to any value.
template <class S>
constexpr Stat<S> min(const char* name, const char* unit, std::int64_t S::*m, bool digest = false) {
  Stat<S> s = sum(name, unit, m, digest);
  s.reduce = Reduce::kMin;
  return s;
}

/// The table of S (found by argument-dependent lookup).
template <class S>
constexpr auto table() {
  return stat_table(std::type_identity<S>{});
}
template <class S>
inline constexpr std::size_t kCount = table<S>().size();

/// Whether every default of S is its reduction's identity (sum: 0; min: -1); checked at compile
/// time by the reductions.
template <class S>
constexpr bool defaults_are_identities() {
  const S d{};
  for (const Stat<S>& f : table<S>()) {
    if (f.reduce == Reduce::kSum && f.value(d) != 0) return false;
    if (f.reduce == Reduce::kMin && f.value(d) != -1) return false;
  }
  return true;
}

/// Combines one value `x` into `into` under `r` (min: -1 is none).
[[nodiscard]] constexpr std::int64_t reduce_value(Reduce r, std::int64_t into, std::int64_t x) {
  switch (r) {
    case Reduce::kSum:
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(into) +
                                       static_cast<std::uint64_t>(x));
    case Reduce::kMax:
      return into > x ? into : x;
    case Reduce::kMin:
      return into < 0 ? x : (x < 0 || into < x ? into : x);
  }
  return into;
}

/// Combines record `x` into `into`, statistic by statistic.
template <class S>
constexpr void combine(S& into, const S& x) {
  for (const Stat<S>& f : table<S>())
    f.set(into, reduce_value(f.reduce, f.value(into), f.value(x)));
}

/// Feeds the statistics flagged for the digest into `h`, in table order.
template <class S>
[[nodiscard]] constexpr std::uint64_t digest(std::uint64_t h, const S& s) {
  for (const Stat<S>& f : table<S>()) {
    if (f.digest) h = hash_combine(h, f.bits(s));
  }
  return h;
}

/// Calls fn(stat) for every statistic of S, in table order.
template <class S, class Fn>
constexpr void for_each(Fn&& fn) {
  for (const Stat<S>& f : table<S>()) fn(f);
}

}  // namespace stepsim::stat
