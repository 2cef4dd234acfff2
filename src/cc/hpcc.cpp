// HPCC sender (Li et al., SIGCOMM 2019, Algorithm 1: MeasureInflight, ComputeWind, NewAck).
// Simplifications: an ACK carries one INT number, U = max over hops of qlen/(B T) + txRate/B,
// which the switches compute themselves (the paper's sender derives txRate from two per-hop
// records and takes min(qlen) of the two); the EWMA's tau is the time between ACKs carrying INT at
// the sender (the paper: between the max hop's INT timestamps), capped at T, and the first INT
// sample is taken whole. W is clamped to [min(1000 B, W_init), W_init] before it is stored in Wc
// (as HPCC's ns-3 code clamps the rate). ACKs without INT leave the state unchanged.
#include "stepsim/cc/hpcc.hpp"

#include <algorithm>
#include <cmath>

#include "src/cc/cc_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::cc {

Hpcc::Hpcc(const HpccParams& p, const CcPath& path)
    : p_(p),
      line_(static_cast<double>(path.line_rate.bits_per_second())),
      t_(p.base_rtt > SimTime::zero() ? p.base_rtt : path.base_rtt),
      t_s_(t_.seconds()),
      w_init_(line_ * t_s_ / 8.0),
      w_ai_((p.rate_ai > DataRate() ? static_cast<double>(p.rate_ai.bits_per_second())
                                    : line_ / 2000.0) *
            t_s_ / 8.0),
      w_min_(std::min(kMinWindowBytes, w_init_)),
      w_(w_init_),
      wc_(w_init_) {
  STEPSIM_CHECK(t_ > SimTime::zero(), "HPCC needs a positive base RTT T");
  STEPSIM_CHECK(line_ > 0, "HPCC needs a positive line rate");
  STEPSIM_CHECK(p_.eta > 0 && p_.eta <= 1, "HPCC eta must be in (0, 1]");
}

DataRate Hpcc::rate() const {
  const double bps = std::min(w_ * 8.0 / t_s_, line_);
  return DataRate::bps(std::llround(bps));
}

std::int64_t Hpcc::window() const {
  return std::llround(w_);
}

void Hpcc::on_sent(SimTime /*now*/, std::int64_t bytes) {
  snd_nxt_ += bytes;
}

void Hpcc::on_ack(SimTime now, const AckInfo& ack) {
  if (ack.utilization < 0) return;  // no INT
  // MeasureInflight: U = (1 - tau/T) U + (tau/T) u, tau capped at T.
  double frac = 1.0;
  if (has_int_) {
    frac = std::min(static_cast<double>((now - last_int_).picoseconds()) /
                        static_cast<double>(t_.picoseconds()),
                    1.0);
  }
  u_ = (1.0 - frac) * u_ + frac * ack.utilization;
  has_int_ = true;
  last_int_ = now;
  // NewAck: Wc moves once per round trip (when the ACK passes what was sent at the last update).
  if (ack.acked > last_update_seq_) {
    w_ = compute_window(true);
    last_update_seq_ = snd_nxt_;
  } else {
    w_ = compute_window(false);
  }
}

double Hpcc::compute_window(bool update_wc) {
  double w;
  if (u_ >= p_.eta || inc_stage_ >= p_.max_stage) {
    // Multiplicative: towards eta (an idle path, U = 0, gives the largest window).
    w = (u_ > 0 ? wc_ / (u_ / p_.eta) : w_init_) + w_ai_;
    w = std::clamp(w, w_min_, w_init_);
    if (update_wc) {
      inc_stage_ = 0;
      wc_ = w;
    }
  } else {
    w = std::clamp(wc_ + w_ai_, w_min_, w_init_);
    if (update_wc) {
      ++inc_stage_;
      wc_ = w;
    }
  }
  return w;
}

namespace {

void hpcc_params(config::ParamTable& t, CcParams& p) {
  HpccParams& h = p.hpcc;
  t.real("cc.hpcc.eta", h.eta, 0.01, 1, "target utilization");
  t.integer("cc.hpcc.max_stage", h.max_stage, 0, 1000, "additive rounds before a reset");
  t.rate("cc.hpcc.rate_ai", h.rate_ai, "W_AI / T (0: line rate / 2000)");
  t.time("cc.hpcc.base_rtt", h.base_rtt, SimTime::zero(), SimTime::s(1),
         "T (0: per QP from the path)");
}

// A window from INT: switches stamp telemetry, and every packet's ACK must bring it back.
CcNeeds hpcc_needs(const CcParams& p) {
  CcNeeds n;
  n.int_telemetry = true;
  n.ack_per_packet = true;
  n.telemetry_rtt = p.hpcc.base_rtt;
  return n;
}

}  // namespace

const CcRegistration kHpcc{
    {"hpcc",
     "Li et al., SIGCOMM 2019: a window from in-network telemetry (INT) "
     "echoed by an ACK per packet",
     [](const CcParams& p, const CcPath& path) { return std::make_unique<Hpcc>(p.hpcc, path); },
     hpcc_needs, hpcc_params}};

}  // namespace stepsim::cc
