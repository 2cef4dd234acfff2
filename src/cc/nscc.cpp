// NSCC-kind sender (see nscc.hpp for the control laws and their sources).
#include "src/cc/nscc.hpp"

#include <algorithm>
#include <cmath>

#include "src/cc/cc_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::cc {

Nscc::Nscc(const NsccParams& p, const CcPath& path)
    : p_(p),
      line_(static_cast<double>(path.line_rate.bits_per_second())),
      base_(p.base_rtt > SimTime::zero() ? p.base_rtt : path.base_rtt),
      target_(p.target_qdelay > SimTime::zero() ? p.target_qdelay
                                                : SimTime::ps(base_.picoseconds() / 2)),
      bdp_(line_ * base_.seconds() / 8.0),
      w_max_(std::max(bdp_ * p.max_window_bdp, static_cast<double>(p.min_window.count()))),
      w_min_(static_cast<double>(p.min_window.count())),
      w_(std::clamp(bdp_, w_min_, w_max_)) {
  STEPSIM_CHECK(base_ > SimTime::zero(), "NSCC needs a positive base RTT");
  STEPSIM_CHECK(line_ > 0, "NSCC needs a positive line rate");
}

DataRate Nscc::rate() const {
  const double bps = std::min(w_ * 8.0 / base_.seconds(), line_);
  return DataRate::bps(std::llround(bps));
}

std::int64_t Nscc::window() const {
  return std::llround(w_);
}

void Nscc::decrease(SimTime now, double fraction) {
  if (!last_md_.is_never() && now - last_md_ < base_) return;  // once per base RTT
  last_md_ = now;
  ++decreases_;
  w_ = std::max(w_min_, w_ * (1.0 - fraction));
}

void Nscc::on_ack(SimTime now, const AckInfo& ack) {
  if (ack.rtt.is_never()) return;  // no sample (a resent packet's, or no echo)
  if (ack.rtt < base_) base_ = ack.rtt;
  const double delay = static_cast<double>((ack.rtt - base_).picoseconds());
  const double target = static_cast<double>(target_.picoseconds());
  const double acked = static_cast<double>(std::max<std::int64_t>(ack.bytes, 1));
  const double fair = static_cast<double>(p_.fair_increase.count()) * acked / w_;
  if (delay > target) {
    if (ack.ecn) {
      decrease(now, std::min(p_.gamma * (delay - target) / delay, p_.max_md));
    } else {
      w_ = std::min(w_max_, w_ + fair);
    }
    return;
  }
  if (ack.ecn) return;  // marked but not delayed: hold
  w_ = std::min(w_max_, w_ + p_.alpha * acked * (target - delay) / target + fair);
}

void Nscc::on_nack(SimTime now) {
  decrease(now, p_.max_md);
}

namespace {

void nscc_params(config::ParamTable& t, CcParams& p) {
  NsccParams& n = p.more.get<NsccParams>("nscc");
  t.time("cc.nscc.target_qdelay", n.target_qdelay, SimTime::zero(), SimTime::s(1),
         "target queueing delay (0: half the base RTT)");
  t.real("cc.nscc.gamma", n.gamma, 0.01, 1, "multiplicative-decrease gain");
  t.real("cc.nscc.max_md", n.max_md, 0.01, 0.99, "largest fraction one decrease takes");
  t.real("cc.nscc.alpha", n.alpha, 0, 10, "proportional-increase gain");
  t.bytes("cc.nscc.fair_increase", n.fair_increase, 0, std::int64_t{1} << 30,
          "fair increase per window of ACKs");
  t.real("cc.nscc.max_window_bdp", n.max_window_bdp, 0.1, 100, "window ceiling in BDPs");
  t.bytes("cc.nscc.min_window", n.min_window, 64, std::int64_t{1} << 30, "window floor");
  t.time("cc.nscc.base_rtt", n.base_rtt, SimTime::zero(), SimTime::s(1),
         "base RTT (0: per QP from the path)");
}

// A window from each ACK's ECN echo and round trip: an ACK per packet that echoes both.
CcNeeds nscc_needs(const CcParams& /*p*/) {
  CcNeeds n;
  n.ack_per_packet = true;
  n.ack_echo = true;
  return n;
}

}  // namespace

const CcRegistration kNscc{
    {"nscc",
     "of the Ultra Ethernet NSCC kind: a window from each ACK's ECN echo and queueing delay "
     "(RTT - base RTT), multiplicative decrease on both, proportional increase below the target",
     [](const CcParams& p, const CcPath& path) {
       return std::make_unique<Nscc>(p.more.get<NsccParams>("nscc"), path);
     },
     nscc_needs, nscc_params}};

}  // namespace stepsim::cc
