// The size parser and number formatting that bench nccl and bench perftest share with
// nccl-tests and perftest (src/cli/bench_output).
#include "src/cli/bench_output.hpp"

#include <gtest/gtest.h>

namespace stepsim::cli {
namespace {

TEST(BenchOutput, SizesInPowersOf1024AsNcclTestsReadsThem) {
  EXPECT_EQ(*parse_binary_size("8"), 8);
  EXPECT_EQ(*parse_binary_size("64K"), 65536);
  EXPECT_EQ(*parse_binary_size("64k"), 65536);
  EXPECT_EQ(*parse_binary_size("32M"), 32LL << 20);
  EXPECT_EQ(*parse_binary_size("1G"), 1LL << 30);
  EXPECT_EQ(*parse_binary_size("8g"), 8LL << 30);
}

TEST(BenchOutput, StepsimUnitsKeepTheirMeaning) {
  EXPECT_EQ(*parse_binary_size("1GiB"), 1LL << 30);
  EXPECT_EQ(*parse_binary_size("1GB"), 1000000000);
  EXPECT_EQ(*parse_binary_size("4KiB"), 4096);
}

TEST(BenchOutput, OverflowAndGarbageAreErrors) {
  EXPECT_FALSE(parse_binary_size("9999999999G"));
  EXPECT_FALSE(parse_binary_size("99999999999999999999"));
  EXPECT_FALSE(parse_binary_size("G"));
  EXPECT_FALSE(parse_binary_size("12X"));
  EXPECT_FALSE(parse_binary_size(""));
  EXPECT_EQ(*parse_binary_size("4294967296G"), 1LL << 62);  // the largest allowed
}

TEST(BenchOutput, NumbersFitTheirColumn) {
  EXPECT_EQ(fit_number(12.345, 7), "  12.35");
  EXPECT_EQ(fit_number(9999.99, 7), "9999.99");
  EXPECT_EQ(fit_number(12345.6, 7), "12345.6");
  EXPECT_EQ(fit_number(1234567.0, 7), "1234567");
  EXPECT_EQ(fit_number(123456789.0, 7), "1.2e+08");
  EXPECT_EQ(fit_number(0.0, 6), "  0.00");
  EXPECT_EQ(fit_number(456.78, 6), "456.78");
  EXPECT_EQ(fit_number(4567.8, 6), "4567.8");
  EXPECT_EQ(fit_number(9999.996, 7), "10000.0");  // rounding adds a digit
  for (double v : {0.001, 1.0, 99.5, 1e3, 5e4, 2e6, 3e9}) {
    EXPECT_EQ(fit_number(v, 7).size(), 7u) << v;
  }
}

}  // namespace
}  // namespace stepsim::cli
