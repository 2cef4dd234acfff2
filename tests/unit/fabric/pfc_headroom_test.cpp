#include "stepsim/fabric/pfc_headroom.hpp"

#include <gtest/gtest.h>

namespace stepsim::fabric {
namespace {

HeadroomInputs at(std::int64_t metres) {
  HeadroomInputs in;
  in.rate = DataRate::gbps(400);  // 50 GB/s
  in.length = Length::m(metres);
  return in;
}

TEST(PfcHeadroom, ReproducesTheInFlightColumnOfTheWorkedTable) {
  // DOMAIN.md section 3 / validation/fabric.md D1 (exact), fibre rows, T_switch + T_nic = 400 ns.
  EXPECT_EQ(pfc_headroom(at(30)).round_trip, SimTime::ns(700));
  EXPECT_EQ(pfc_headroom(at(30)).in_flight, Bytes(35'000));
  EXPECT_EQ(pfc_headroom(at(100)).in_flight, Bytes(70'000));
  EXPECT_EQ(pfc_headroom(at(300)).in_flight, Bytes(170'000));
}

TEST(PfcHeadroom, ThreeMetreDacRowIsInconsistentWithTheFormula) {
  // The table's 3 m DAC row says 480 ns / 24 KB. The formula gives 2 x 3 m x 5 ns/m + 400 ns =
  // 430 ns (21,500 B); 480 ns would need 13.3 ns/m, slower than any copper cable (~4.3-5 ns/m).
  const Headroom h = pfc_headroom(at(3));
  EXPECT_EQ(h.round_trip, SimTime::ns(430));
  EXPECT_EQ(h.in_flight, Bytes(21'500));
}

TEST(PfcHeadroom, AddsTwoMtuACellAndOpticalDsp) {
  HeadroomInputs in = at(100);
  EXPECT_EQ(pfc_headroom(in).headroom, Bytes(70'000 + 2 * 4096 + 256));
  in.dsp_modules = 2;
  in.dsp_delay = SimTime::ns(150);
  EXPECT_EQ(pfc_headroom(in).round_trip, SimTime::ns(1700));
  EXPECT_EQ(pfc_headroom(in).in_flight, Bytes(85'000));
}

TEST(PfcHeadroom, Mlx5DriverFormulaMatchesItsPublishedValues) {
  // validation/fabric.md C1 (exact, C integer arithmetic).
  EXPECT_EQ(mlx5_headroom(400, 7, 4096), Bytes(137'541));
  EXPECT_EQ(mlx5_headroom(100, 100, 1500), Bytes(55'780));
}

}  // namespace
}  // namespace stepsim::fabric
