#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/fabric/switch_headroom.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/packet.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::fabric {
namespace {

HeadroomInputs headroom_at(std::int64_t metres) {
  HeadroomInputs in;
  in.rate = DataRate::gbps(400);  // 50 GB/s
  in.length = Length::m(metres);
  return in;
}

TEST(PfcHeadroom, ReproducesTheInFlightColumnOfTheWorkedTable) {
  // DOMAIN.md section 3 / validation/fabric.md D1 (exact), fibre rows, T_switch + T_nic = 400 ns.
  EXPECT_EQ(pfc_headroom(headroom_at(30)).round_trip, SimTime::ns(700));
  EXPECT_EQ(pfc_headroom(headroom_at(30)).in_flight, Bytes(35'000));
  EXPECT_EQ(pfc_headroom(headroom_at(100)).in_flight, Bytes(70'000));
  EXPECT_EQ(pfc_headroom(headroom_at(300)).in_flight, Bytes(170'000));
}

TEST(PfcHeadroom, ThreeMetreDacRowIsInconsistentWithTheFormula) {
  // The table's 3 m DAC row says 480 ns / 24 KB. The formula gives 2 x 3 m x 5 ns/m + 400 ns =
  // 430 ns (21,500 B); 480 ns would need 13.3 ns/m, slower than any copper cable (~4.3-5 ns/m).
  const Headroom h = pfc_headroom(headroom_at(3));
  EXPECT_EQ(h.round_trip, SimTime::ns(430));
  EXPECT_EQ(h.in_flight, Bytes(21'500));
}

TEST(PfcHeadroom, AddsTwoMtuACellAndOpticalDsp) {
  HeadroomInputs in = headroom_at(100);
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

SwitchHeadroomInputs spectrum(std::int64_t gbps, std::int64_t metres, std::int64_t mtu) {
  SwitchHeadroomInputs in;  // Spectrum-2/3 constants: cell 144 B, 0.8 / 3.8 / 18 KB
  in.rate = DataRate::gbps(gbps);
  in.length = Length::m(metres);
  in.per_metre = SimTime::ns(5);
  in.mtu = Bytes(mtu);
  in.cell_factor_model = CellFactorModel::kSonic;  // the hand-computed values are SONiC's
  return in;
}

TEST(SwitchHeadroom, HandComputed100GPort) {
  // 100G, 5 m, MTU 1500, cell 144 B, all packets small:
  // on cable 25 ns x 100 Gb/s = 312.5 -> 313 B; propagation 1500 + 2 x 313 + 819 + 3891 = 6836;
  // cell factor 144 / 64 = 2.25; xoff 1500 + ceil(6836 x 2.25 = 15381) = 16881; xon 18432.
  const SwitchHeadroom h = switch_headroom(spectrum(100, 5, 1500));
  EXPECT_DOUBLE_EQ(h.cell_factor, 2.25);
  EXPECT_DOUBLE_EQ(h.cell_occupancy, 2.25);
  EXPECT_EQ(h.on_cable, Bytes(313));
  EXPECT_EQ(h.propagation, Bytes(6836));
  EXPECT_EQ(h.xoff, Bytes(16'881));
  EXPECT_EQ(h.xon, Bytes(18'432));
  EXPECT_EQ(h.speed_overhead, Bytes(0));
  EXPECT_EQ(h.per_pg, Bytes(35'313));
  EXPECT_EQ(h.per_port, Bytes(2 * 35'313));
  EXPECT_EQ(h.total, Bytes(64 * 2 * 35'313));
}

TEST(SwitchHeadroom, FourHundredGigPortsDoubleThePipelineAndAddAnMtu) {
  // 400G, 5 m, MTU 4096: on cable 1250 B; propagation 4096 + 2500 + 819 + 3891 = 11306;
  // xoff 4096 + ceil(25438.5) = 29535; xon 2 x 18432; + MTU.
  const SwitchHeadroom h = switch_headroom(spectrum(400, 5, 4096));
  EXPECT_EQ(h.on_cable, Bytes(1250));
  EXPECT_EQ(h.xoff, Bytes(29'535));
  EXPECT_EQ(h.xon, Bytes(36'864));
  EXPECT_EQ(h.per_pg, Bytes(29'535 + 36'864 + 4096));
}

TEST(SwitchHeadroom, SharedPoolKeepsXonPerPriorityAndDividesTheXoffs) {
  SwitchHeadroomInputs in = spectrum(100, 5, 1500);
  in.shared_ratio = 2;
  const SwitchHeadroom h = switch_headroom(in);
  EXPECT_EQ(h.reserved, Bytes(128 * 18'432));
  EXPECT_EQ(h.shared_pool, Bytes(128 * 16'881 / 2));
  EXPECT_EQ(h.total, Bytes(128 * 18'432 + 128 * 16'881 / 2));
  EXPECT_LT(h.total, switch_headroom(spectrum(100, 5, 1500)).total);
}

TEST(SwitchHeadroom, CellFactorFollowsTheCellSizeAndTheSmallPacketShare) {
  SwitchHeadroomInputs in = spectrum(100, 5, 1500);
  in.cell = Bytes(96);  // Spectrum-1: at most two 64 B packets' worth, 2 c / (1 + c)
  EXPECT_DOUBLE_EQ(switch_headroom(in).cell_factor, 192.0 / 97.0);
  in.small_packet_percent = 50;
  EXPECT_DOUBLE_EQ(switch_headroom(in).cell_occupancy, (50 + 50 * 192.0 / 97.0) / 100);
  in.small_packet_percent = 0;  // big packets only: no rounding loss
  EXPECT_DOUBLE_EQ(switch_headroom(in).cell_occupancy, 1.0);
  EXPECT_EQ(switch_headroom(in).xoff, Bytes(1500 + 6836));
  // Bigger cells waste more on small packets: headroom grows with the cell.
  Bytes last(0);
  for (const std::int64_t cell : {96, 144, 256, 384}) {
    SwitchHeadroomInputs c = spectrum(100, 5, 1500);
    c.cell = Bytes(cell);
    EXPECT_GT(switch_headroom(c).per_pg, last) << cell;
    last = switch_headroom(c).per_pg;
  }
}

TEST(SwitchHeadroom, MatchesSonicsSpectrumCalculatorWithinAByte) {
  // SONiC buffer_headroom_mellanox.lua in floating point, 100G, 5 m, MTU 1500, Spectrum-2:
  // cable 2 x 5 x 1e11 / 1.98e8 / 8 = 631.31 B; propagation 1500 + 631.31 + 819.2 + 3891.2;
  // xoff 1500 + 6841.71 x 2.25 = 16893.86; headroom ceil(16893.86 + 18432) = 35326.
  SwitchHeadroomInputs in = spectrum(100, 5, 1500);
  in.per_metre = SimTime::ps(5051);  // light at 198,000 km/s
  EXPECT_NEAR(static_cast<double>(switch_headroom(in).per_pg.count()), 35'326.0, 1.0);
}

TEST(SwitchHeadroom, WireCellFactorIsTheVendorsAndMeetsItsRecommendation) {
  // The vendor counts each packet's 20 B of preamble and gap: for Spectrum-1's 96 B cell the
  // worst packet is one byte over a cell, the Linux mlxsw driver's 2 cell / (IPG + cell + 1).
  SwitchHeadroomInputs in = spectrum(100, 100, 9216);
  in.cell_factor_model = CellFactorModel::kWire;
  in.cell = Bytes(96);
  EXPECT_DOUBLE_EQ(switch_headroom(in).cell_factor, 192.0 / (96 + 1 + 20));
  in.cell = Bytes(144);  // Spectrum-2/3: still the packet over a cell (288/165 > 144/84)
  EXPECT_DOUBLE_EQ(switch_headroom(in).cell_factor, 288.0 / (144 + 1 + 20));
  in.cell = Bytes(256);  // a 64 B packet alone in a cell: 256 / 84, not SONiC's 256 / 64
  const SwitchHeadroom wire = switch_headroom(in);
  EXPECT_DOUBLE_EQ(wire.cell_factor, 256.0 / 84.0);
  // 100G, 100 m (6,250 B on the cable), MTU 9216: propagation 9216 + 2 x 6250 + 819 + 3891 =
  // 26426; xoff 9216 + ceil(26426 x 256 / 84) = 89753; headroom + xon 18432 = 108185 B.
  EXPECT_EQ(wire.per_pg, Bytes(108'185));
  // Mellanox's recommendation for a 100 Gb/s port and a 100 m cable: 101.6 KB (Linux commit
  // edf777f55aee, "mlxsw: spectrum_buffers: Update port headroom configuration", 2019). The
  // vendor's factor is within 7% of it; SONiC's worst case (4) is 31% above.
  const double vendor = 101'600;
  EXPECT_NEAR(static_cast<double>(wire.per_pg.count()) / vendor, 1.0, 0.07);
  in.cell_factor_model = CellFactorModel::kSonic;
  const double sonic = static_cast<double>(switch_headroom(in).per_pg.count()) / vendor;
  EXPECT_NEAR(sonic, 1.3125, 0.005);  // 133,352 B
}

TEST(PortHeadroom, CoversTheModelsRoundTripOnEveryLinkAt1600G) {
  // After a switch decides XOFF, its upstream keeps sending until the PAUSE has crossed the link
  // (its one-way latency: propagation, PHY and, on optics, the transmit and receive modules'
  // DSPs), then finishes the frame on the wire; what it sent arrives over the link's latency
  // and this switch's pipeline. So the port's headroom must hold at least
  // (2 latency + pipeline) x rate + one frame. The formula's "+ 2 DSP" counted one module per
  // direction: 250 ns (50 KB) short on the 100 m optics of a 1.6T fabric, where an 8:1 incast
  // dropped packets although PFC was on.
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/fat-tree-k4-1.6t.yaml")
          .value();
  FabricParams p;
  int optics = 0;
  for (topology::LinkId l = 0; l < topo.links.size(); ++l) {
    const topology::Link& link = topo.links[l];
    const SimTime loop = link.latency * 2 + p.sw.latency;
    const auto bits = static_cast<double>(loop.picoseconds()) * 1e-12 *
                      static_cast<double>(topo.link_rate(l).bits_per_second());
    const double need = bits / 8 + static_cast<double>(p.mtu.count() + kRoceHeaderBytes);
    EXPECT_GE(static_cast<double>(port_headroom(p, topo, l).count()), need) << "link " << l;
    optics += link.cable == topology::CableKind::kOptics ? 1 : 0;
  }
  EXPECT_GT(optics, 0);
}

}  // namespace
}  // namespace stepsim::fabric
