#include "stepsim/core/units.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace stepsim {
namespace {

using namespace stepsim::literals;

TEST(Units, ParsesTimesExactly) {
  EXPECT_EQ(parse_time("1us").value(), SimTime::us(1));
  EXPECT_EQ(parse_time("1.5us").value(), SimTime::ns(1500));
  EXPECT_EQ(parse_time(" 250 ns ").value(), SimTime::ps(250'000));
  EXPECT_EQ(parse_time("2ms").value(), SimTime::ms(2));
  EXPECT_EQ(parse_time("3s").value(), SimTime::s(3));
  EXPECT_EQ(parse_time("1e-6s").value(), SimTime::us(1));
  EXPECT_EQ(parse_time("0.001ps").ok(), false);  // not a whole picosecond
  EXPECT_EQ(parse_time("4.46ps").ok(), false);
  EXPECT_EQ(parse_time("4ps").value(), SimTime::ps(4));
}

TEST(Units, ParsesRatesFromPhysicsUnits) {
  EXPECT_EQ(parse_rate("400Gbps").value().bits_per_second(), 400'000'000'000);
  EXPECT_EQ(parse_rate("1.6Tbps").value().bits_per_second(), 1'600'000'000'000);
  EXPECT_EQ(parse_rate("212.5Gb/s").value().bits_per_second(), 212'500'000'000);
  EXPECT_EQ(parse_rate("50GB/s").value().bits_per_second(), 400'000'000'000);  // bytes/s * 8
  EXPECT_EQ(parse_rate("400G").value().bits_per_second(), 400'000'000'000);    // port shorthand
  EXPECT_EQ(parse_rate("1.6T").value().bits_per_second(), 1'600'000'000'000);
}

TEST(Units, ParsesSizesAndLengths) {
  EXPECT_EQ(parse_bytes("4KiB").value().count(), 4096);
  EXPECT_EQ(parse_bytes("4KB").value().count(), 4000);
  EXPECT_EQ(parse_bytes("1.5MiB").value().count(), 1536 * 1024);
  EXPECT_EQ(parse_bytes("4096").value().count(), 4096);  // bare count of bytes
  EXPECT_EQ(parse_bytes("8GiB").value().count(), 8LL << 30);
  EXPECT_FALSE(parse_bytes("0.1KiB").ok());  // 102.4 bytes
  EXPECT_EQ(parse_length("30m").value().micrometres(), 30'000'000);
  EXPECT_EQ(parse_length("2.5cm").value().micrometres(), 25'000);
  EXPECT_EQ(parse_length("1.2km").value(), Length::m(1200));
}

TEST(Units, ErrorsNameTheTextAndTheAllowedUnits) {
  const auto no_unit = parse_time("1");
  ASSERT_FALSE(no_unit.ok());
  EXPECT_NE(no_unit.error().message.find("'1' is not a time: it has no unit"), std::string::npos)
      << no_unit.error().message;
  EXPECT_NE(no_unit.error().message.find("ps, ns, us"), std::string::npos);

  const auto bad_unit = parse_rate("400Gbs");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_NE(bad_unit.error().message.find("unknown unit 'Gbs'"), std::string::npos);
  EXPECT_NE(bad_unit.error().message.find("Gbps"), std::string::npos);

  EXPECT_NE(parse_bytes("-4KiB").error().message.find("negative"), std::string::npos);
  EXPECT_NE(parse_time("us").error().message.find("does not start with a number"),
            std::string::npos);
  EXPECT_NE(parse_time("1e30s").error().message.find("too large"), std::string::npos);
  EXPECT_NE(parse_length("3 meters").error().message.find("unknown unit 'meters'"),
            std::string::npos);
}

TEST(Units, SerializationTimeRoundsUp) {
  // 4096 B at 400 Gb/s = 81.92 ns exactly.
  EXPECT_EQ(DataRate::gbps(400).serialization_time(Bytes(4096)), SimTime::ps(81'920));
  // 256 B at 1.6 Tb/s = 1.28 ns (DOMAIN.md: the source's "12 ns" is inconsistent).
  EXPECT_EQ((1.6_Tbps).serialization_time(Bytes(256)), SimTime::ps(1280));
  // 1 B at 3 bit/s = 2.666.. s -> rounded up to the next picosecond.
  EXPECT_EQ(DataRate::bps(3).serialization_time(Bytes(1)), SimTime::ps(2'666'666'666'667));
  // No overflow for large transfers: 1 TiB at 100 Gb/s.
  EXPECT_EQ(DataRate::gbps(100).serialization_time(Bytes(1LL << 40)),
            SimTime::ps((1LL << 40) * 8 * 10));
}

TEST(Units, PropagationDelay) {
  EXPECT_EQ(Length::m(100).delay(SimTime::ns(5)), SimTime::ns(500));
  EXPECT_EQ((3_m).delay(SimTime::ps(4900)), SimTime::ps(14'700));
}

TEST(Units, PrintsShortExactForms) {
  EXPECT_EQ(to_string(SimTime::ns(1500)), "1.5us");
  EXPECT_EQ(to_string(SimTime::ms(2)), "2ms");
  EXPECT_EQ(to_string(SimTime::ps(7)), "7ps");
  EXPECT_EQ(to_string(SimTime::never()), "never");
  EXPECT_EQ(to_string(DataRate::bps(1'600'000'000'000)), "1.6Tbps");
  EXPECT_EQ(to_string(Bytes(4096)), "4KiB");
  EXPECT_EQ(to_string(Bytes(1000)), "1000B");
  EXPECT_EQ(to_string(Length::m(30)), "30m");
  // Round trip through the parser.
  for (const char* s : {"1.5us", "2ms", "81.92ns", "3ps"}) {
    EXPECT_EQ(to_string(parse_time(s).value()), s);
  }
}

TEST(Units, LiteralsMatchFactories) {
  EXPECT_EQ(5_us, SimTime::us(5));
  EXPECT_EQ(1.5_us, SimTime::ns(1500));
  EXPECT_EQ(4_KiB, Bytes(4096));
  EXPECT_EQ(400_Gbps, DataRate::gbps(400));
  EXPECT_EQ(SimTime::ms(1).saturating_add(SimTime::never()), SimTime::never());
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Issue 15: huge mantissas wrapped the 128-bit product (340282366920938463463374607432G ran as
// 231.8 Mbps). Every too-large value is an error, whatever its digits, exponent and unit.
TEST(Units, HugeValuesAreTooLargeNotWrapped) {
  for (const char* text : {"340282366920938463463374607432G", "340282366920938463463374607432Tbps",
                           "99999999999999999999999999999999999999TB/s", "1e40Tbps",
                           "18446744073709551616bps", "9223372036854775808bps"}) {
    const auto r = parse_rate(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("too large"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(parse_rate("9223372036854775807bps").value().bits_per_second(), INT64_MAX);
  EXPECT_FALSE(parse_bytes("40000TB").ok() && parse_bytes("40000TB").value().count() < 0);
  EXPECT_FALSE(parse_time("5000000000s").ok());
  // Significant digits beyond 19 after the point: an error unless they are zeros.
  EXPECT_EQ(parse_time("1.00000000000000000000000000000000s").value(), SimTime::s(1));
  EXPECT_FALSE(parse_time("1.00000000000000000000000000000001s").ok());
  EXPECT_EQ(parse_time("0000000000000000000000000001ns").value(), SimTime::ns(1));
}

// Generated unit strings (deterministic seed): the parser never crashes, a value it accepts is
// non-negative and agrees with a floating-point reading of the text, and a rejection is one
// message quoting the text.
TEST(Units, GeneratedUnitStringsParseExactlyOrFailCleanly) {
  const char* units[] = {"ps", "ns", "us", "ms", "s",   "bps", "Kbps", "Gbps", "Tbps",
                         "G",  "T",  "B",  "KB", "KiB", "MiB", "GiB",  "TiB",  "TB/s",
                         "m",  "km", "um", "",   "x",   "e",   "ee"};
  const Dimension dims[] = {Dimension::kTime, Dimension::kRate, Dimension::kBytes,
                            Dimension::kLength};
  std::mt19937_64 rng(15);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string num;
    if (rng() % 8 == 0) num += "-+ "[rng() % 3];
    const int digits = 1 + static_cast<int>(rng() % (rng() % 4 == 0 ? 40 : 6));
    const int point = static_cast<int>(rng() % (digits + 2));
    for (int d = 0; d < digits; ++d) {
      if (d == point && d > 0) num += '.';
      num += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 5 == 0) num += "e" + std::to_string(static_cast<int>(rng() % 50) - 25);
    const std::string text = num + units[rng() % std::size(units)];
    const Dimension dim = dims[rng() % std::size(dims)];
    Result<std::int64_t> r = Error{""};
    ASSERT_NO_THROW(r = parse_quantity(text, dim)) << text;
    if (!r) {
      EXPECT_EQ(r.error().message.rfind("'" + text + "' is not ", 0), 0u) << r.error().message;
      continue;
    }
    ++accepted;
    EXPECT_GE(*r, 0) << text;
    // The same value through long double: digits x 10^exp x the unit's scale.
    const auto back = parse_quantity(text, dim);
    EXPECT_EQ(back.value(), *r);
    std::size_t end = 0;
    const long double approx = std::stold(num, &end);
    const std::string unit = text.substr(end);
    if (approx > 0 &&
        (unit.empty() || unit == "B" || unit == "bps" || unit == "ps" || unit == "um")) {
      EXPECT_NEAR(static_cast<double>(*r / approx), 1.0, 1e-9) << text;
    }
  }
  EXPECT_GT(accepted, 2000);
}

}  // namespace
}  // namespace stepsim
