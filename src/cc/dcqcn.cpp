// DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.1 and Figure 6), with the parameter
// names of validation/fabric.md C3 and the NIC firmware's refinements (docs/nic.md): cuts at most
// once per rate-reduce period (a CNP inside it defers the cut to the period's end), and the target
// rate clamped to the current rate at a cut always (the paper) or only when the timer raised the
// rate since the last cut (the firmware's default). Simplifications: the rate is a double in
// bit/s (the hardware keeps fixed-point registers); the timers and the byte counter start with the
// first CNP (before it the QP runs at line rate and there is nothing to recover); alpha is read
// only at a cut, so its decay (one factor (1 - g) per K without a CNP) is applied lazily there,
// as the timer would have.
#include "stepsim/cc/dcqcn.hpp"

#include <algorithm>
#include <cmath>

#include "src/cc/cc_registry.hpp"

namespace stepsim::cc {

Dcqcn::Dcqcn(const DcqcnParams& p, DataRate line_rate)
    : p_(p),
      line_(static_cast<double>(line_rate.bits_per_second())),
      rc_(line_),
      rt_(line_),
      alpha_(p.initial_alpha) {}

double Dcqcn::alpha_at(SimTime now) const {
  if (alpha_at_.is_never() || now <= alpha_at_) return alpha_;
  const std::int64_t periods = (now - alpha_at_).picoseconds() / p_.alpha_timer.picoseconds();
  return alpha_ * std::pow(1.0 - p_.g, static_cast<double>(periods));
}

void Dcqcn::decay_alpha(SimTime now) {
  if (alpha_at_.is_never() || now <= alpha_at_) return;
  const std::int64_t periods = (now - alpha_at_).picoseconds() / p_.alpha_timer.picoseconds();
  if (periods <= 0) return;
  alpha_ *= std::pow(1.0 - p_.g, static_cast<double>(periods));
  alpha_at_ = alpha_at_ + p_.alpha_timer * periods;
}

void Dcqcn::on_cnp(SimTime now) {
  decay_alpha(now);
  const bool in_period = p_.rate_reduce_period > SimTime::zero() && !last_cut_.is_never() &&
                         now - last_cut_ < p_.rate_reduce_period;
  if (in_period) {
    cut_pending_ = true;  // the cut comes at the period's end, with alpha as it is then
  } else {
    cut(now);
  }
  alpha_ = (1.0 - p_.g) * alpha_ + p_.g;  // the CNP raises alpha; its K restarts
  alpha_at_ = now;
}

// RC <- RC (1 - alpha/2) (not below the floor), the target first set to RC when clamping applies;
// the increase counters and the timer restart.
void Dcqcn::cut(SimTime now) {
  if (p_.clamp_target || (p_.clamp_target_after_timer && timer_raised_)) rt_ = rc_;
  rc_ = std::max(rc_ * (1.0 - alpha_ / 2.0), static_cast<double>(p_.min_rate.bits_per_second()));
  t_count_ = 0;
  b_count_ = 0;
  bytes_ = 0;
  timer_raised_ = false;
  cut_pending_ = false;
  active_ = true;
  last_cut_ = now;
  increase_due_ = now + p_.increase_timer;
}

void Dcqcn::on_sent(SimTime /*now*/, std::int64_t bytes) {
  if (!active_) return;
  bytes_ += bytes;
  while (bytes_ >= p_.byte_counter) {
    bytes_ -= p_.byte_counter;
    ++b_count_;
    increase();
  }
}

SimTime Dcqcn::next_timer() const {
  const SimTime cut_due = cut_pending_ ? last_cut_ + p_.rate_reduce_period : SimTime::never();
  return std::min(cut_due, increase_due_);
}

void Dcqcn::on_timer(SimTime now) {
  if (cut_pending_ && last_cut_ + p_.rate_reduce_period <= now) {
    decay_alpha(now);
    cut(now);  // restarts the increase timer
    return;
  }
  if (increase_due_ <= now) {
    ++t_count_;
    timer_raised_ = true;
    increase_due_ = now + p_.increase_timer;
    increase();  // may stop the timer (full recovery)
  }
}

void Dcqcn::increase() {
  const int hi = std::max(t_count_, b_count_);
  const int lo = std::min(t_count_, b_count_);
  const int f = p_.fast_recovery_rounds;
  if (hi < f) {
    // Fast recovery: halfway back to the target.
  } else if (lo > f) {
    rt_ +=
        static_cast<double>(lo - f) * static_cast<double>(p_.rate_hai.bits_per_second());  // hyper
  } else {
    rt_ += static_cast<double>(p_.rate_ai.bits_per_second());  // additive
  }
  rt_ = std::min(rt_, line_);
  rc_ = std::min((rt_ + rc_) / 2.0, line_);
  if (line_ - rc_ < 1.0) rc_ = line_;  // within a bit/s: halving would never quite get there
  if (rc_ >= line_ && rt_ >= line_) {
    // Fully recovered: no increase timer until the next CNP (alpha keeps decaying, lazily).
    active_ = false;
    increase_due_ = SimTime::never();
  }
}

// The named sets. "mlx5": NVIDIA's DCQCN parameter table for ConnectX-4 and later (firmware
// defaults): dce_tcp_g 1019, dce_tcp_rtt 1 us, initial_alpha_value 1023, rate_reduce_monitor_period
// 4 us, clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1, rpg_time_reset 300 us, rpg_byte_reset
// 32767 B, rpg_threshold 1, rpg_ai_rate 5 Mb/s, rpg_hai_rate 50 Mb/s, rpg_min_rate 1 Mb/s,
// min_time_between_cnps 4 us. "sigcomm15": the paper's 40G settings (validation/fabric.md C3).
std::vector<std::string> dcqcn_preset_names() {
  return {"mlx5", "sigcomm15"};
}

bool dcqcn_preset(const std::string& name, DcqcnParams& out) {
  if (name == "mlx5") {
    out = DcqcnParams{};
    return true;
  }
  if (name == "sigcomm15") {
    DcqcnParams d;
    d.preset = name;
    d.g = 1.0 / 256;
    d.initial_alpha = 1.0;
    d.alpha_timer = SimTime::us(55);
    d.rate_reduce_period = SimTime::zero();  // each CNP cuts (CNPs are N apart)
    d.clamp_target = true;
    d.clamp_target_after_timer = false;
    d.increase_timer = SimTime::us(55);
    d.byte_counter = 10'000'000;
    d.fast_recovery_rounds = 5;
    d.rate_ai = DataRate::bps(40'000'000);
    d.rate_hai = DataRate::bps(100'000'000);
    d.min_rate = DataRate::bps(100'000'000);
    d.cnp_interval = SimTime::us(50);
    out = d;
    return true;
  }
  return false;
}

namespace {

void dcqcn_params(config::ParamTable& t, CcParams& p) {
  const SimTime max_time = SimTime::s(1);
  DcqcnParams& d = p.dcqcn;
  // First: choosing a set rewrites every key below (keys after it in a file override it).
  t.add({"cc.dcqcn.preset",
         "named parameter set: mlx5 (NVIDIA NIC firmware defaults) or sigcomm15 (the paper's "
         "40G settings); sets every cc.dcqcn key",
         [&d](const std::string& v) -> Result<bool> {
           if (dcqcn_preset(v, d)) return true;
           return Error{"'" + v + "' is not allowed (allowed: mlx5, sigcomm15)"};
         },
         [&d] { return d.preset; }},
        dcqcn_preset_names());
  t.real("cc.dcqcn.g", d.g, 0, 1, "alpha gain");
  t.real("cc.dcqcn.initial_alpha", d.initial_alpha, 0, 1, "alpha at the first CNP");
  t.time("cc.dcqcn.alpha_timer", d.alpha_timer, SimTime::ns(1), max_time, "K");
  t.time("cc.dcqcn.rate_reduce_period", d.rate_reduce_period, SimTime::zero(), max_time,
         "at most one cut per period; a CNP within it defers the cut to its end (0: every CNP)");
  t.boolean("cc.dcqcn.clamp_target", d.clamp_target, "every cut sets the target to the rate");
  t.boolean("cc.dcqcn.clamp_target_after_timer", d.clamp_target_after_timer,
            "a cut sets the target to the rate if the timer raised the rate since the last cut");
  t.time("cc.dcqcn.increase_timer", d.increase_timer, SimTime::ns(1), max_time, "T");
  t.integer("cc.dcqcn.byte_counter", d.byte_counter, 1, std::int64_t{1} << 40, "B (bytes)");
  t.integer("cc.dcqcn.fast_recovery_rounds", d.fast_recovery_rounds, 0, 1000, "F");
  t.rate("cc.dcqcn.rate_ai", d.rate_ai, "R_AI");
  t.rate("cc.dcqcn.rate_hai", d.rate_hai, "R_HAI");
  t.rate("cc.dcqcn.min_rate", d.min_rate, "floor of the current rate");
  t.time("cc.dcqcn.cnp_interval", d.cnp_interval, SimTime::zero(), max_time,
         "at most one CNP per QP per interval");
}

// Rate-based, driven by CNPs: receivers must send them for ECN-marked packets.
CcNeeds dcqcn_needs(const CcParams& p) {
  CcNeeds n;
  n.cnp = true;
  n.cnp_interval = p.dcqcn.cnp_interval;
  return n;
}

}  // namespace

const CcRegistration kDcqcn{
    {"dcqcn", "Zhu et al., SIGCOMM 2015: ECN marks, CNPs, a rate limiter (mlx5 firmware defaults)",
     [](const CcParams& p, const CcPath& path) {
       return std::make_unique<Dcqcn>(p.dcqcn, path.line_rate);
     },
     dcqcn_needs, dcqcn_params}};

}  // namespace stepsim::cc
