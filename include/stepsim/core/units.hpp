#pragma once
/// Strong types for simulated time, data sizes, rates and lengths, and the one parser for unit
/// strings ("1us", "400Gbps", "30m", "4KiB"). All integer; no floating-point time in the engine.

#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "stepsim/core/result.hpp"

namespace stepsim {

/// 128-bit integers for exact intermediate products (GCC/Clang extension).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

/// Simulated time: a signed 64-bit count of picoseconds (covers +-106 days).
class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime ps(std::int64_t v) { return SimTime(v); }
  static constexpr SimTime ns(std::int64_t v) { return SimTime(v * 1000); }
  static constexpr SimTime us(std::int64_t v) { return SimTime(v * 1000'000); }
  static constexpr SimTime ms(std::int64_t v) { return SimTime(v * 1000'000'000); }
  static constexpr SimTime s(std::int64_t v) { return SimTime(v * 1000'000'000'000); }
  static constexpr SimTime zero() { return SimTime(0); }
  /// The time that never comes; the "no event" marker.
  static constexpr SimTime never() { return SimTime(std::numeric_limits<std::int64_t>::max()); }

  [[nodiscard]] constexpr std::int64_t picoseconds() const { return ps_; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  [[nodiscard]] constexpr bool is_never() const { return ps_ == never().ps_; }

  constexpr auto operator<=>(const SimTime&) const = default;
  constexpr SimTime operator+(SimTime o) const { return SimTime(ps_ + o.ps_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ps_ - o.ps_); }
  constexpr SimTime& operator+=(SimTime o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr SimTime& operator-=(SimTime o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr SimTime operator*(std::int64_t k) const { return SimTime(ps_ * k); }
  constexpr SimTime operator/(std::int64_t k) const { return SimTime(ps_ / k); }

  /// `a + b`, saturating at never() (for "now + delay" where delay may be never()).
  [[nodiscard]] constexpr SimTime saturating_add(SimTime o) const {
    return (o.ps_ > 0 && ps_ > never().ps_ - o.ps_) ? never() : SimTime(ps_ + o.ps_);
  }

 private:
  constexpr explicit SimTime(std::int64_t v) : ps_(v) {}
  std::int64_t ps_ = 0;
};

/// A size in bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::int64_t v) : b_(v) {}
  [[nodiscard]] constexpr std::int64_t count() const { return b_; }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(b_ + o.b_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(b_ - o.b_); }

 private:
  std::int64_t b_ = 0;
};

/// A data rate in bits per second.
class DataRate {
 public:
  constexpr DataRate() = default;
  static constexpr DataRate bps(std::int64_t v) { return DataRate(v); }
  static constexpr DataRate gbps(std::int64_t v) { return DataRate(v * 1000'000'000); }
  [[nodiscard]] constexpr std::int64_t bits_per_second() const { return bps_; }
  constexpr auto operator<=>(const DataRate&) const = default;

  /// Time to put `size` on the wire at this rate, rounded up to a whole picosecond.
  [[nodiscard]] constexpr SimTime serialization_time(Bytes size) const {
    constexpr std::int64_t kBitPs = 8 * 1000'000'000'000LL;  // bits per byte x ps per second
    if (size.count() >= 0 && size.count() < INT64_MAX / kBitPs - 1 && bps_ > 0) {
      // Packets: the product fits in 64 bits (sizes up to ~1.1 MB); same result, no 128-bit divide.
      return SimTime::ps((size.count() * kBitPs + bps_ - 1) / bps_);
    }
    const Int128 num = static_cast<Int128>(size.count()) * kBitPs;
    return SimTime::ps(static_cast<std::int64_t>((num + bps_ - 1) / bps_));
  }

 private:
  constexpr explicit DataRate(std::int64_t v) : bps_(v) {}
  std::int64_t bps_ = 0;
};

/// A length (cables), in micrometres.
class Length {
 public:
  constexpr Length() = default;
  static constexpr Length um(std::int64_t v) { return Length(v); }
  static constexpr Length mm(std::int64_t v) { return Length(v * 1000); }
  static constexpr Length m(std::int64_t v) { return Length(v * 1000'000); }
  [[nodiscard]] constexpr std::int64_t micrometres() const { return um_; }
  [[nodiscard]] constexpr double metres() const { return static_cast<double>(um_) * 1e-6; }
  constexpr auto operator<=>(const Length&) const = default;

  /// Propagation delay at `per_metre` (e.g. 5 ns/m in fibre), rounded up to a picosecond.
  [[nodiscard]] constexpr SimTime delay(SimTime per_metre) const {
    const Int128 num = static_cast<Int128>(um_) * per_metre.picoseconds();
    return SimTime::ps(static_cast<std::int64_t>((num + 999'999) / 1000'000));
  }

 private:
  constexpr explicit Length(std::int64_t v) : um_(v) {}
  std::int64_t um_ = 0;
};

/// What a unit string measures; picks the allowed units and the base unit.
enum class Dimension { kTime, kRate, kBytes, kLength };

/// Parses "<number><unit>" (decimal, optional exponent, optional space before the unit) into an
/// integer count of the dimension's base unit (ps, bit/s, byte, micrometre). The value must be
/// non-negative and a whole number of base units; the error names the text and the allowed units.
Result<std::int64_t> parse_quantity(std::string_view text, Dimension dim);

Result<SimTime> parse_time(std::string_view text);
Result<DataRate> parse_rate(std::string_view text);
Result<Bytes> parse_bytes(std::string_view text);
Result<Length> parse_length(std::string_view text);

/// Human-readable forms: "1.5us", "400Gbps", "4KiB", "30m" (shortest exact unit where possible).
std::string to_string(SimTime t);
std::string to_string(DataRate r);
std::string to_string(Bytes b);
std::string to_string(Length l);

namespace literals {
constexpr SimTime operator""_ps(unsigned long long v) {
  return SimTime::ps(static_cast<std::int64_t>(v));
}
constexpr SimTime operator""_ns(unsigned long long v) {
  return SimTime::ns(static_cast<std::int64_t>(v));
}
constexpr SimTime operator""_us(unsigned long long v) {
  return SimTime::us(static_cast<std::int64_t>(v));
}
constexpr SimTime operator""_ms(unsigned long long v) {
  return SimTime::ms(static_cast<std::int64_t>(v));
}
constexpr SimTime operator""_s(unsigned long long v) {
  return SimTime::s(static_cast<std::int64_t>(v));
}
constexpr SimTime operator""_ns(long double v) {
  return SimTime::ps(static_cast<std::int64_t>(v * 1e3L + 0.5L));
}
constexpr SimTime operator""_us(long double v) {
  return SimTime::ps(static_cast<std::int64_t>(v * 1e6L + 0.5L));
}
constexpr Bytes operator""_B(unsigned long long v) {
  return Bytes(static_cast<std::int64_t>(v));
}
constexpr Bytes operator""_KiB(unsigned long long v) {
  return Bytes(static_cast<std::int64_t>(v) << 10);
}
constexpr Bytes operator""_MiB(unsigned long long v) {
  return Bytes(static_cast<std::int64_t>(v) << 20);
}
constexpr Bytes operator""_GiB(unsigned long long v) {
  return Bytes(static_cast<std::int64_t>(v) << 30);
}
constexpr DataRate operator""_Gbps(unsigned long long v) {
  return DataRate::gbps(static_cast<std::int64_t>(v));
}
constexpr DataRate operator""_Gbps(long double v) {
  return DataRate::bps(static_cast<std::int64_t>(v * 1e9L + 0.5L));
}
constexpr DataRate operator""_Tbps(long double v) {
  return DataRate::bps(static_cast<std::int64_t>(v * 1e12L + 0.5L));
}
constexpr DataRate operator""_Tbps(unsigned long long v) {
  return DataRate::gbps(static_cast<std::int64_t>(v) * 1000);
}
constexpr Length operator""_m(unsigned long long v) {
  return Length::m(static_cast<std::int64_t>(v));
}
}  // namespace literals

}  // namespace stepsim
