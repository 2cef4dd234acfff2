#include "stepsim/fabric/wire_errors.hpp"

#include <gtest/gtest.h>

#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/phy/fec.hpp"

namespace stepsim::fabric {
namespace {

TEST(WireErrors, AZeroBerLinkLosesAndCorrectsNothing) {
  WireErrors w;
  w.reset(pdes::Rng(1, 2, 3), 0.0);
  FabricParams p;
  PortStats st;
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(w.lose_frame(4158, p, st));
  EXPECT_EQ(st.drops_fec + st.fec_corrected + st.fec_uncorrectable, 0u);
}

TEST(WireErrors, LossProbabilityIsTheFecFormulaOverTheFramesCodewords) {
  WireErrors w;
  const double ber = 2e-3;
  w.reset(pdes::Rng(1, 2, 3), ber);
  FabricParams p;
  const double pcw = phy::codeword_failure_probability_burst(phy::kKp4, ber, 1);
  const std::int64_t cws = phy::codewords_spanned(phy::kKp4, Bytes(4158));
  EXPECT_DOUBLE_EQ(w.loss_probability(4158, p), phy::any_failure_probability(pcw, cws));
  p.fec = false;
  w.invalidate();
  EXPECT_DOUBLE_EQ(w.loss_probability(4158, p), phy::raw_frame_error_probability(ber, Bytes(4158)));
}

TEST(WireErrors, WithoutFecTheLostShareMatchesTheRawFrameErrorRate) {
  WireErrors w;
  w.reset(pdes::Rng(5, 6, 7), 1e-5);
  FabricParams p;
  p.fec = false;
  PortStats st;
  const int n = 50'000;
  for (int i = 0; i < n; ++i) w.lose_frame(4158, p, st);
  const double want = phy::raw_frame_error_probability(1e-5, Bytes(4158));
  EXPECT_NEAR(static_cast<double>(st.drops_fec) / n, want, 0.01);
  EXPECT_EQ(st.drops_fec, st.fec_uncorrectable);
  EXPECT_EQ(st.fec_corrected, 0u);
}

}  // namespace
}  // namespace stepsim::fabric
