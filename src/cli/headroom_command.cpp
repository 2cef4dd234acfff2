#include "src/cli/headroom_command.hpp"

#include <cstdio>

#include "src/cli/cli.hpp"
#include "src/cli/input_checks.hpp"
#include "stepsim/fabric/pfc_headroom.hpp"

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
  for (CLI::Option* opt : cmd_->get_options()) {
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

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
  if (rank != 0) return kExitOk;

  const fabric::Headroom h = fabric::pfc_headroom(in);
  const std::int64_t gbps = in.rate.bits_per_second() / 1000'000'000;
  const std::int64_t metres = in.length.micrometres() / 1000'000;
  const Bytes mlx5 = fabric::mlx5_headroom(gbps, metres, in.mtu.count());
  std::printf("PFC headroom: %s port, %s %s cable, MTU %lld B\n", to_string(in.rate).c_str(),
              to_string(in.length).c_str(), cable_.c_str(), static_cast<long long>(in.mtu.count()));
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
  return kExitOk;
}

}  // namespace stepsim::cli
