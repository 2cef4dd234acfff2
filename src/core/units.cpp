#include "stepsim/core/units.hpp"

#include <array>
#include <cctype>
#include <span>

namespace stepsim {
namespace {

struct Unit {
  std::string_view name;
  std::int64_t scale;  // base units per unit
};

// Base units: ps, bit/s, byte, micrometre.
constexpr std::array kTimeUnits{Unit{"ps", 1},
                                Unit{"ns", 1000},
                                Unit{"us", 1000'000},
                                Unit{"\xC2\xB5s", 1000'000},
                                Unit{"ms", 1000'000'000},
                                Unit{"s", 1000'000'000'000}};
constexpr std::array kRateUnits{
    Unit{"bps", 1}, Unit{"Kbps", 1000}, Unit{"kbps", 1000}, Unit{"Mbps", 1000'000},
    Unit{"Gbps", 1000'000'000}, Unit{"Tbps", 1000'000'000'000}, Unit{"b/s", 1}, Unit{"Kb/s", 1000},
    Unit{"kb/s", 1000}, Unit{"Mb/s", 1000'000}, Unit{"Gb/s", 1000'000'000},
    Unit{"Tb/s", 1000'000'000'000}, Unit{"B/s", 8}, Unit{"KB/s", 8000}, Unit{"kB/s", 8000},
    Unit{"MB/s", 8000'000}, Unit{"GB/s", 8000'000'000}, Unit{"TB/s", 8000'000'000'000},
    // Port-speed shorthand: "400G", "1.6T".
    Unit{"M", 1000'000}, Unit{"G", 1000'000'000}, Unit{"T", 1000'000'000'000}};
constexpr std::array kByteUnits{
    Unit{"B", 1},           Unit{"KB", 1000},         Unit{"kB", 1000},
    Unit{"MB", 1000'000},   Unit{"GB", 1000'000'000}, Unit{"TB", 1000'000'000'000},
    Unit{"KiB", 1LL << 10}, Unit{"MiB", 1LL << 20},   Unit{"GiB", 1LL << 30},
    Unit{"TiB", 1LL << 40}};
constexpr std::array kLengthUnits{Unit{"um", 1}, Unit{"mm", 1000}, Unit{"cm", 10'000},
                                  Unit{"m", 1000'000}, Unit{"km", 1000'000'000}};

struct DimensionInfo {
  std::string_view what;
  std::string_view base;
  std::span<const Unit> units;
  bool unitless_ok;  // a bare number is a count of base units
  std::string_view example;
};

DimensionInfo info(Dimension dim) {
  switch (dim) {
    case Dimension::kTime:
      return {"a time", "picoseconds", kTimeUnits, false, "1.5us"};
    case Dimension::kRate:
      return {"a data rate", "bits per second", kRateUnits, false, "400Gbps"};
    case Dimension::kBytes:
      return {"a size", "bytes", kByteUnits, true, "4KiB"};
    case Dimension::kLength:
      return {"a length", "micrometres", kLengthUnits, false, "30m"};
  }
  return {"a quantity", "units", {}, false, ""};
}

std::string allowed_units(const DimensionInfo& d) {
  std::string s;
  for (const Unit& u : d.units) {
    if (!s.empty()) s += ", ";
    s += u.name;
  }
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Error quantity_error(std::string_view text, const DimensionInfo& d, std::string_view why) {
  std::string msg;
  msg.append("'").append(text).append("' is not ").append(d.what).append(": ").append(why);
  msg.append(" (write a number and one of: ").append(allowed_units(d));
  msg.append("; e.g. ").append(d.example).append(")");
  return Error{std::move(msg)};
}

// A decimal number, exactly: mantissa x 10^exp10.
struct Decimal {
  UInt128 mantissa = 0;
  int exp10 = 0;
};

// The digits (with at most one point) of `s` from `i`, which moves past them. At most 19
// significant digits are kept, so that mantissa x scale (< 10^19 x 8e12) cannot wrap 128 bits; a
// dropped digit before the point makes the value too large anyway, a dropped non-zero digit after
// it is an error. The error says why.
Result<Decimal> parse_digits(std::string_view s, std::size_t& i) {
  constexpr int kMaxDigits = 19;
  Decimal x;
  int digits = 0;  // significant digits (leading zeros do not count)
  bool any_digit = false;
  bool seen_point = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      any_digit = true;
      if (digits == 0 && c == '0') {
        if (seen_point) --x.exp10;
        continue;
      }
      if (digits < kMaxDigits) {
        x.mantissa = x.mantissa * 10 + static_cast<unsigned>(c - '0');
        if (seen_point) --x.exp10;
      } else if (!seen_point) {
        ++x.exp10;
      } else if (c != '0') {
        return Error{"it has more than 19 significant digits"};
      }
      ++digits;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any_digit) return Error{"it does not start with a number"};
  return x;
}

// An exponent (e or E, an optional sign, digits) at `i` of `s`, if there is one: added to
// `exp10`, and `i` moves past it.
Result<bool> parse_exponent(std::string_view s, std::size_t& i, int& exp10) {
  if (!(i < s.size() && (s[i] == 'e' || s[i] == 'E') && i + 1 < s.size() &&
        (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '-' ||
         s[i + 1] == '+'))) {
    return true;
  }
  std::size_t j = i + 1;
  int sign = 1;
  if (s[j] == '-' || s[j] == '+') sign = s[j++] == '-' ? -1 : 1;
  int e = 0;
  bool any = false;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
    e = e * 10 + (s[j++] - '0');
    any = true;
    if (e > 40) return Error{"the exponent is out of range"};
  }
  if (!any) return Error{"the exponent has no digits"};
  exp10 += sign * e;
  i = j;
  return true;
}

// Base units per `unit` of dimension `d` (1 for no unit where a bare number is allowed).
Result<std::int64_t> unit_scale(std::string_view unit, const DimensionInfo& d) {
  if (unit.empty()) {
    if (!d.unitless_ok) return Error{"it has no unit"};
    return 1;
  }
  for (const Unit& u : d.units) {
    if (u.name == unit) return u.scale;
  }
  return Error{"unknown unit '" + std::string(unit) + "'"};
}

// mantissa x 10^exp10 x scale, exactly, in base units.
Result<std::int64_t> exact_value(Decimal x, std::int64_t scale, const DimensionInfo& d) {
  UInt128 value = x.mantissa * static_cast<UInt128>(scale);
  constexpr UInt128 kLimit = static_cast<UInt128>(INT64_MAX);
  for (; x.exp10 > 0; --x.exp10) {
    value *= 10;
    if (value > kLimit) return Error{"it is too large"};
  }
  for (; x.exp10 < 0; ++x.exp10) {
    if (value % 10 != 0) return Error{"it is not a whole number of " + std::string(d.base)};
    value /= 10;
  }
  if (value > kLimit) return Error{"it is too large"};
  return static_cast<std::int64_t>(value);
}

}  // namespace

Result<std::int64_t> parse_quantity(std::string_view text, Dimension dim) {
  const DimensionInfo d = info(dim);
  const std::string_view s = trim(text);
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    if (s[i] == '-') return quantity_error(text, d, "negative values are not allowed");
    ++i;
  }
  auto digits = parse_digits(s, i);
  if (!digits) return quantity_error(text, d, digits.error().message);
  Decimal x = *digits;
  if (auto ok = parse_exponent(s, i, x.exp10); !ok) {
    return quantity_error(text, d, ok.error().message);
  }
  auto scale = unit_scale(trim(s.substr(i)), d);
  if (!scale) return quantity_error(text, d, scale.error().message);
  auto value = exact_value(x, *scale, d);
  if (!value) return quantity_error(text, d, value.error().message);
  return *value;
}

Result<SimTime> parse_time(std::string_view text) {
  auto r = parse_quantity(text, Dimension::kTime);
  if (!r) return r.error();
  return SimTime::ps(*r);
}

Result<DataRate> parse_rate(std::string_view text) {
  auto r = parse_quantity(text, Dimension::kRate);
  if (!r) return r.error();
  return DataRate::bps(*r);
}

Result<Bytes> parse_bytes(std::string_view text) {
  auto r = parse_quantity(text, Dimension::kBytes);
  if (!r) return r.error();
  return Bytes(*r);
}

Result<Length> parse_length(std::string_view text) {
  auto r = parse_quantity(text, Dimension::kLength);
  if (!r) return r.error();
  return Length::um(*r);
}

namespace {

// Prints v / scale with up to `max_frac` decimals, trailing zeros removed.
std::string scaled(std::int64_t v, std::int64_t scale, std::string_view unit) {
  const bool neg = v < 0;
  const unsigned long long a =
      neg ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  const unsigned long long s = static_cast<unsigned long long>(scale);
  std::string out = (neg ? "-" : "") + std::to_string(a / s);
  unsigned long long frac = a % s;
  if (frac != 0) {
    std::string digits;
    for (unsigned long long p = s / 10; p > 0; p /= 10) {
      digits += static_cast<char>('0' + (frac / p) % 10);
    }
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out + std::string(unit);
}

template <std::size_t N>
std::string pick(std::int64_t v, const std::array<Unit, N>& units) {
  // Largest unit with at most three decimals.
  const Unit* best = &units[0];
  const unsigned long long a =
      v < 0 ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  for (const Unit& u : units) {
    if (u.scale > best->scale && a >= static_cast<unsigned long long>(u.scale) &&
        (u.scale < 1000 || a % static_cast<unsigned long long>(u.scale / 1000) == 0)) {
      best = &u;
    }
  }
  return scaled(v, best->scale, best->name);
}

}  // namespace

std::string to_string(SimTime t) {
  if (t.is_never()) return "never";
  constexpr std::array units{Unit{"ps", 1}, Unit{"ns", 1000}, Unit{"us", 1000'000},
                             Unit{"ms", 1000'000'000}, Unit{"s", 1000'000'000'000}};
  return pick(t.picoseconds(), units);
}

std::string to_string(DataRate r) {
  constexpr std::array units{Unit{"bps", 1}, Unit{"Kbps", 1000}, Unit{"Mbps", 1000'000},
                             Unit{"Gbps", 1000'000'000}, Unit{"Tbps", 1000'000'000'000}};
  return pick(r.bits_per_second(), units);
}

std::string to_string(Bytes b) {
  const std::int64_t v = b.count();
  constexpr std::array<Unit, 5> units{Unit{"B", 1}, Unit{"KiB", 1LL << 10}, Unit{"MiB", 1LL << 20},
                                      Unit{"GiB", 1LL << 30}, Unit{"TiB", 1LL << 40}};
  for (std::size_t i = units.size(); i-- > 1;) {
    if (v != 0 && v % units[i].scale == 0) return scaled(v, units[i].scale, units[i].name);
  }
  return std::to_string(v) + "B";
}

std::string to_string(Length l) {
  constexpr std::array units{Unit{"um", 1}, Unit{"mm", 1000}, Unit{"m", 1000'000},
                             Unit{"km", 1000'000'000}};
  return pick(l.micrometres(), units);
}

}  // namespace stepsim
