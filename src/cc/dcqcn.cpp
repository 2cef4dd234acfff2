// DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.1 and Figure 6), with the parameter
// names of validation/fabric.md C3. Simplifications: the rate is a double in bit/s (the hardware
// keeps fixed-point registers); the timers and the byte counter start with the first CNP (before
// it the QP runs at line rate and there is nothing to recover); once fully recovered the timers
// stop and alpha's decay is applied at the next CNP, exactly as the timer would have.
#include "stepsim/cc/dcqcn.hpp"

#include <algorithm>

#include "src/cc/cc_registry.hpp"

namespace stepsim::cc {

Dcqcn::Dcqcn(const DcqcnParams& p, DataRate line_rate)
    : p_(p), line_(static_cast<double>(line_rate.bits_per_second())), rc_(line_), rt_(line_) {}

void Dcqcn::on_cnp(SimTime now) {
  if (!active_ && !alpha_time_.is_never()) {
    // Idle since full recovery: apply the alpha decays its timer would have made since then.
    const std::int64_t periods = (now - alpha_time_).picoseconds() / p_.alpha_timer.picoseconds();
    for (std::int64_t i = 0; i < std::min<std::int64_t>(periods, 100'000); ++i)
      alpha_ *= 1.0 - p_.g;
  }
  // Cut: remember where we were, then RC <- RC (1 - alpha/2); alpha <- (1 - g) alpha + g.
  rt_ = rc_;
  rc_ = std::max(rc_ * (1.0 - alpha_ / 2.0), static_cast<double>(p_.min_rate.bits_per_second()));
  alpha_ = (1.0 - p_.g) * alpha_ + p_.g;
  t_count_ = 0;
  b_count_ = 0;
  bytes_ = 0;
  active_ = true;
  alpha_due_ = now + p_.alpha_timer;
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
  return std::min(alpha_due_, increase_due_);
}

void Dcqcn::on_timer(SimTime now) {
  if (alpha_due_ <= now) {
    alpha_ = (1.0 - p_.g) * alpha_;  // no CNP for a whole K
    alpha_due_ = now + p_.alpha_timer;
  }
  if (increase_due_ <= now) {
    ++t_count_;
    increase_due_ = now + p_.increase_timer;
    increase();  // may stop the timers (full recovery)
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
    // Fully recovered: no timers until the next CNP; alpha keeps decaying, lazily.
    active_ = false;
    increase_due_ = SimTime::never();
    alpha_time_ = alpha_due_ - p_.alpha_timer;
    alpha_due_ = SimTime::never();
  }
}

namespace {

void dcqcn_params(config::ParamTable& t, CcParams& p) {
  const SimTime max_time = SimTime::s(1);
  DcqcnParams& d = p.dcqcn;
  t.real("cc.dcqcn.g", d.g, 0, 1, "alpha gain");
  t.time("cc.dcqcn.alpha_timer", d.alpha_timer, SimTime::ns(1), max_time, "K");
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
    {"dcqcn", "Zhu et al., SIGCOMM 2015: ECN marks, CNPs, a rate limiter (paper's 40G defaults)",
     [](const CcParams& p, const CcPath& path) {
       return std::make_unique<Dcqcn>(p.dcqcn, path.line_rate);
     },
     dcqcn_needs, dcqcn_params}};

}  // namespace stepsim::cc
