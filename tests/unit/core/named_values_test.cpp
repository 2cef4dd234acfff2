// One table per enum's names: parsing, naming and the allowed list agree, and every memory kind
// the NIC parameters accept names itself back.
#include "stepsim/core/named_values.hpp"

#include <gtest/gtest.h>

#include "stepsim/nic/nic_params.hpp"

namespace stepsim {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr std::array<NamedValue<Colour>, 3> kColours{{
    {Colour::kRed, "red"},
    {Colour::kGreen, "green", "the middle one"},
    {Colour::kBlue, "blue"},
}};

TEST(NamedValues, ParseNameAndListAgree) {
  for (const auto& v : kColours) {
    ASSERT_EQ(find_named(kColours, v.name), v.value) << v.name;
    EXPECT_EQ(name_of(kColours, v.value), v.name);
  }
  EXPECT_FALSE(find_named(kColours, "Red").has_value());
  EXPECT_EQ(allowed_names(kColours), "red, green (the middle one), blue");
  constexpr int kSizes[] = {128, 256, 4096};
  EXPECT_EQ(number_list(kSizes), "128, 256, 4096");
}

TEST(NamedValues, MemoryKindsRoundTripAndTheErrorListsThemAll) {
  const auto bad = nic::parse_memory_kind("hbm");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "unknown memory kind 'hbm' (allowed: host, gpudirect, gpu_root_complex, bounce)");
  for (const char* name : {"host", "gpudirect", "gpu_root_complex", "bounce"}) {
    const auto k = nic::parse_memory_kind(name);
    ASSERT_TRUE(k) << name;
    EXPECT_EQ(nic::memory_kind_name(*k), name);
  }
}

}  // namespace
}  // namespace stepsim
