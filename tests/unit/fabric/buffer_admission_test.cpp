#include "stepsim/fabric/buffer_admission.hpp"

#include <gtest/gtest.h>

namespace stepsim::fabric {
namespace {

TEST(BufferAdmission, LossyFollowsTheDynamicThreshold) {
  // alpha 1: a queue may grow while it stays below the free buffer.
  const BufferAdmission a(1'000'000, 1.0, 150'000);
  EXPECT_EQ(a.lossy(1'000, 0, 0), Admission::kAdmit);
  // 600 KB used: 400 KB free; a queue of 398 KB + 1 KB fits, 400 KB + 1 KB does not.
  EXPECT_EQ(a.lossy(1'000, 398'000, 600'000), Admission::kAdmit);
  EXPECT_EQ(a.lossy(1'000, 400'000, 600'000), Admission::kNoBuffer);
  // alpha 0.5 halves the share one queue may take.
  const BufferAdmission half(1'000'000, 0.5, 150'000);
  EXPECT_EQ(half.lossy(1'000, 198'000, 600'000), Admission::kAdmit);
  EXPECT_EQ(half.lossy(1'000, 200'000, 600'000), Admission::kNoBuffer);
  // A full buffer admits nothing.
  EXPECT_EQ(a.lossy(1'000, 0, 999'500), Admission::kNoBuffer);
}

TEST(BufferAdmission, LosslessIsBoundedByXoffPlusHeadroom) {
  const BufferAdmission a(64 << 20, 1.0, 150'000);
  EXPECT_EQ(a.lossless(4'000, 150'000, 50'000, 0), Admission::kAdmit);
  EXPECT_EQ(a.lossless(4'000, 196'000, 50'000, 0), Admission::kAdmit);
  EXPECT_EQ(a.lossless(4'000, 196'001, 50'000, 0), Admission::kNoHeadroom);
}

}  // namespace
}  // namespace stepsim::fabric
