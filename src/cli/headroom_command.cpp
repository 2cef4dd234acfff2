#include "src/cli/headroom_command.hpp"

#include <cstdio>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"
#include "stepsim/fabric/switch_headroom.hpp"

namespace stepsim::cli {
namespace {

constexpr std::int64_t kMaxRateBps = 100'000'000'000'000;  // 100 Tb/s

}  // namespace

HeadroomCommand::HeadroomCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "headroom",
      "PFC headroom of a lossless port: in-flight bytes after XOFF = (2 x length x delay/m + "
      "switch delay + NIC delay [+ 2 optical DSPs]) x rate; headroom = in flight + 2 MTU + cell");
  cmd_->add_option("--rate", rate_, "Port data rate (e.g. 400G, 800Gbps, 1.6T)")
      ->capture_default_str();
  cmd_->add_option("--length", length_, "Cable length (e.g. 3m, 100m)")->capture_default_str();
  cmd_->add_option("--mtu", mtu_, "MTU in bytes (e.g. 4096)")->capture_default_str();
  cmd_->add_option("--cable", cable_,
                   "Cable kind: fiber, aoc, dac (no DSP) or optics (2 DSP modules)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fiber", "aoc", "dac", "optics"}));
  cmd_->add_option("--delay-per-m", per_metre_, "Propagation delay per metre")
      ->capture_default_str();
  cmd_->add_option("--switch-delay", switch_delay_,
                   "PAUSE generation time in the switch (200-350ns)")
      ->capture_default_str();
  cmd_->add_option("--nic-delay", nic_delay_, "Reaction time of the sender (150-250ns)")
      ->capture_default_str();
  cmd_->add_option("--dsp", dsp_, "Latency of one optical DSP module (100-150ns)")
      ->capture_default_str();
  cmd_->add_option("--cell", cell_, "Switch buffer cell size (256 or 384)")->capture_default_str();
  cmd_->add_option("--small-packets", small_packets_,
                   "Switch side: percent of minimum-size packets the cells must hold (0-100)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd_->add_option("--cell-factor", cell_factor_,
                   "Switch side: worst-case cell factor, wire (the vendor's: packets with their "
                   "20 B of preamble and gap, mlxsw) or sonic (packet bytes only, SONiC)")
      ->capture_default_str()
      ->check(CLI::IsMember({"wire", "sonic"}));
  cmd_->add_option("--mac-phy", mac_phy_, "Switch side: MAC/PHY delay in bytes (SONiC 0.8 KB)")
      ->capture_default_str();
  cmd_->add_option("--peer-response", peer_response_,
                   "Switch side: the peer's PAUSE response in bytes (SONiC 3.8 KB)")
      ->capture_default_str();
  cmd_->add_option("--pipeline", pipeline_,
                   "Switch side: pipeline latency in bytes, the XON reserve (SONiC 18 KB)")
      ->capture_default_str();
  cmd_->add_option("--gearbox", gearbox_, "Switch side: gearbox latency each way")
      ->capture_default_str();
  cmd_->add_option("--priorities", priorities_, "Switch side: lossless priorities per port")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd_->add_option("--ports", ports_, "Switch side: ports carrying lossless traffic")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--shared-ratio", shared_ratio_,
                   "Switch side: shared headroom pool over-subscribe ratio (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  for (CLI::Option* opt : cmd_->get_options()) {
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

namespace {

// The NIC formula (DOMAIN.md) beside the Linux mlx5 driver's.
void print_nic_headroom(const fabric::HeadroomInputs& in, const std::string& cable) {
  const fabric::Headroom h = fabric::pfc_headroom(in);
  const std::int64_t gbps = in.rate.bits_per_second() / 1000'000'000;
  const std::int64_t metres = in.length.micrometres() / 1000'000;
  const Bytes mlx5 = fabric::mlx5_headroom(gbps, metres, in.mtu.count());
  std::printf("PFC headroom: %s port, %s %s cable, MTU %lld B\n", to_string(in.rate).c_str(),
              to_string(in.length).c_str(), cable.c_str(), static_cast<long long>(in.mtu.count()));
  std::printf("round trip       %s = 2 x %s x %s/m + switch %s + NIC %s",
              to_string(h.round_trip).c_str(), to_string(in.length).c_str(),
              to_string(in.per_metre).c_str(), to_string(in.switch_delay).c_str(),
              to_string(in.nic_delay).c_str());
  if (in.dsp_modules > 0) std::printf(" + 2 DSP x %s", to_string(in.dsp_delay).c_str());
  std::printf("\nin flight        %lld B (%.1f KB)\n", static_cast<long long>(h.in_flight.count()),
              static_cast<double>(h.in_flight.count()) / 1000.0);
  std::printf("headroom         %lld B (%.1f KB) = in flight + 2 x MTU + cell %lld B\n",
              static_cast<long long>(h.headroom.count()),
              static_cast<double>(h.headroom.count()) / 1000.0,
              static_cast<long long>(in.cell.count()));
  std::printf(
      "mlx5 driver xoff %lld B (Linux mlx5 formula: (301 + 216 x %lld m / 100) x %lld Gb/s + "
      "272 x MTU / 100)\n",
      static_cast<long long>(mlx5.count()), static_cast<long long>(metres),
      static_cast<long long>(gbps));
}

void print_switch_headroom(const fabric::SwitchHeadroomInputs& sw) {
  // What a switch vendor's calculator recommends (SONiC's dynamic buffer model, Spectrum
  // constants by default; docs/fabric.md).
  const fabric::SwitchHeadroom s = fabric::switch_headroom(sw);
  const auto ll = [](Bytes b) { return static_cast<long long>(b.count()); };
  std::printf("switch side (SONiC dynamic buffer model, per port and lossless priority):\n");
  const bool sonic = sw.cell_factor_model == fabric::CellFactorModel::kSonic;
  const char* worst = sonic ? (sw.cell.count() > 128 ? "sonic: cell / 64 B per minimum packet"
                                                     : "sonic: 2 cell / (1 + cell)")
                            : "wire: max(cell / (64 + 20) B, 2 cell / (cell + 1 + 20) B)";
  std::printf("  cell factor    %.4f = (100 - %d + %d x %.4f) / 100 (cell %lld B; worst case %s)\n",
              s.cell_occupancy, sw.small_packet_percent, sw.small_packet_percent, s.cell_factor,
              ll(sw.cell), worst);
  std::printf(
      "  propagation    %lld B = MTU + 2 x (cable %lld B + gearbox %lld B) + MAC/PHY %lld B "
      "+ peer response %lld B\n",
      ll(s.propagation), ll(s.on_cable), ll(s.on_gearbox), ll(sw.mac_phy), ll(sw.peer_response));
  std::printf("  xoff           %lld B = MTU + propagation x cell factor\n", ll(s.xoff));
  std::printf("  xon            %lld B = pipeline %lld B%s\n", ll(s.xon), ll(sw.pipeline),
              s.speed_overhead.count() > 0 ? " x 2 (port of 400G or more)" : "");
  std::printf("  headroom       %lld B (%.1f KB) = xoff + xon%s\n", ll(s.per_pg),
              static_cast<double>(s.per_pg.count()) / 1000.0,
              s.speed_overhead.count() > 0 ? " + MTU (port of 400G or more)" : "");
  std::printf("  per port       %lld B = %d lossless priorities x headroom\n", ll(s.per_port),
              sw.priorities);
  if (sw.shared_ratio > 0) {
    std::printf(
        "  switch         %lld B (%.2f MB) = %d ports x %d priorities x (xon + overhead) "
        "%lld B + shared headroom pool %lld B (all xoff / %d)\n",
        ll(s.total), static_cast<double>(s.total.count()) / 1e6, sw.ports, sw.priorities,
        ll(s.reserved), ll(s.shared_pool), sw.shared_ratio);
  } else {
    std::printf(
        "  switch         %lld B (%.2f MB) = %d ports x per port (no shared headroom "
        "pool)\n",
        ll(s.total), static_cast<double>(s.total.count()) / 1e6, sw.ports);
  }
}

}  // namespace

int HeadroomCommand::execute(int rank) {
  fabric::HeadroomInputs in;
  // Ranges far beyond real ports and cables, small enough that no product overflows.
  auto rate = rate_option("--rate", rate_, DataRate::bps(1000'000), DataRate::bps(kMaxRateBps));
  if (!rate) return user_error(rank, rate.error().message);
  auto length = length_option("--length", length_, Length::um(0), Length::m(100'000));
  if (!length) return user_error(rank, length.error().message);
  auto mtu = bytes_option("--mtu", mtu_, 1, 1 << 20);
  if (!mtu) return user_error(rank, mtu.error().message);
  auto cell = bytes_option("--cell", cell_, 1, 1 << 20);
  if (!cell) return user_error(rank, cell.error().message);
  const struct {
    const char* option;
    const std::string* text;
    SimTime* out;
    SimTime max;
  } times[] = {{"--delay-per-m", &per_metre_, &in.per_metre, SimTime::us(1)},
               {"--switch-delay", &switch_delay_, &in.switch_delay, SimTime::ms(1)},
               {"--nic-delay", &nic_delay_, &in.nic_delay, SimTime::ms(1)},
               {"--dsp", &dsp_, &in.dsp_delay, SimTime::ms(1)}};
  for (const auto& t : times) {
    auto parsed = time_option(t.option, *t.text, SimTime::zero(), t.max);
    if (!parsed) return user_error(rank, parsed.error().message);
    *t.out = *parsed;
  }
  in.rate = *rate;
  in.length = *length;
  in.mtu = *mtu;
  in.cell = *cell;
  in.dsp_modules = cable_ == "optics" ? 2 : 0;

  fabric::SwitchHeadroomInputs sw;
  const struct {
    const char* option;
    const std::string* text;
    Bytes* out;
  } sizes[] = {{"--mac-phy", &mac_phy_, &sw.mac_phy},
               {"--peer-response", &peer_response_, &sw.peer_response},
               {"--pipeline", &pipeline_, &sw.pipeline}};
  for (const auto& b : sizes) {
    auto parsed = bytes_option(b.option, *b.text, 0, 1 << 24);
    if (!parsed) return user_error(rank, parsed.error().message);
    *b.out = *parsed;
  }
  auto gearbox = time_option("--gearbox", gearbox_, SimTime::zero(), SimTime::ms(1));
  if (!gearbox) return user_error(rank, gearbox.error().message);
  sw.rate = in.rate;
  sw.length = in.length;
  sw.per_metre = in.per_metre;
  sw.mtu = in.mtu;
  sw.cell = in.cell;
  sw.small_packet_percent = small_packets_;
  sw.cell_factor_model =
      cell_factor_ == "sonic" ? fabric::CellFactorModel::kSonic : fabric::CellFactorModel::kWire;
  sw.priorities = priorities_;
  sw.ports = ports_;
  sw.shared_ratio = shared_ratio_;
  sw.gearbox = *gearbox;
  if (rank != 0) return kExitOk;

  print_nic_headroom(in, cable_);
  print_switch_headroom(sw);
  return kExitOk;
}

}  // namespace stepsim::cli
