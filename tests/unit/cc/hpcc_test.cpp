#include "stepsim/cc/hpcc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <vector>

namespace stepsim::cc {
namespace {

constexpr double kHpccLine = 400e9;
const CcPath kPath{DataRate::gbps(400), SimTime::us(2)};  // W_init = 400 Gb/s x 2 us = 100 kB

TEST(Hpcc, RegistryCreatesHpccAtLineRateWithOneBdpWindow) {
  CcParams p;
  p.algorithm = "hpcc";
  auto cc = make_congestion_control(p, kPath).value();
  EXPECT_EQ(cc->window(), 100'000);
  EXPECT_EQ(cc->rate(), DataRate::gbps(400));
  EXPECT_TRUE(cc->next_timer().is_never());
  // No ECN in HPCC, and an ACK without INT changes nothing.
  cc->on_sent(SimTime::zero(), 50'000);
  cc->on_cnp(SimTime::us(1));
  cc->on_ack(SimTime::us(2), AckInfo{10'000, -1});
  EXPECT_EQ(cc->window(), 100'000);
  EXPECT_EQ(cc->rate(), DataRate::gbps(400));
  // The first ACK with INT acts on it: U = 2 eta halves the window (plus W_AI = 50 B).
  cc->on_ack(SimTime::us(3), AckInfo{20'000, 2 * 0.95});
  EXPECT_EQ(cc->window(), 50'050);
  EXPECT_EQ(cc->rate(), DataRate::bps(200'200'000'000));  // W x 8 / T
}

// Algorithm 1 of the paper, written out again from its statement: the implementation must match
// it ACK by ACK.
struct Statement {
  double eta = 0.95;
  int max_stage = 5;
  double t = 2e-6;
  double w_init = kHpccLine * 2e-6 / 8;
  double w_ai = kHpccLine / 2000 * 2e-6 / 8;
  double w = w_init, wc = w_init, u = 0;
  int inc_stage = 0;
  std::int64_t last_update_seq = 0;
  std::int64_t t_ps = 2'000'000;
  std::int64_t last_ack_ps = -1;

  double clamp(double x) const { return std::clamp(x, 1000.0, w_init); }
  double compute_wind(bool update_wc) {
    double x;
    if (u >= eta || inc_stage >= max_stage) {
      x = clamp(wc / (u / eta) + w_ai);
      if (update_wc) {
        inc_stage = 0;
        wc = x;
      }
    } else {
      x = clamp(wc + w_ai);
      if (update_wc) {
        ++inc_stage;
        wc = x;
      }
    }
    return x;
  }
  void new_ack(std::int64_t now_ps, std::int64_t acked, double util, std::int64_t snd_nxt) {
    const std::int64_t tau = last_ack_ps < 0 ? t_ps : std::min(now_ps - last_ack_ps, t_ps);
    const double f = static_cast<double>(tau) / static_cast<double>(t_ps);
    u = (1 - f) * u + f * util;
    last_ack_ps = now_ps;
    if (acked > last_update_seq) {
      w = compute_wind(true);
      last_update_seq = snd_nxt;
    } else {
      w = compute_wind(false);
    }
  }
};

TEST(Hpcc, DeclaresIntAndAnAckPerPacketAndNoCnps) {
  CcParams p;
  p.algorithm = "hpcc";
  CcNeeds n = congestion_control_needs(p).value();
  EXPECT_TRUE(n.int_telemetry);
  EXPECT_TRUE(n.ack_per_packet);  // every packet's INT reaches the window
  EXPECT_FALSE(n.cnp);
  EXPECT_EQ(n.telemetry_rtt, SimTime::zero());  // the fabric keeps its own INT window
  p.hpcc.base_rtt = SimTime::ns(8'500);
  n = congestion_control_needs(p).value();
  EXPECT_EQ(n.telemetry_rtt, SimTime::ns(8'500));  // T sets the switches' window too
}

TEST(Hpcc, FollowsAlgorithmOneThroughMultiplicativeAndAdditiveStages) {
  Hpcc h(HpccParams{}, kPath);
  Statement s;
  std::int64_t sent = 0;
  auto send = [&](SimTime now, std::int64_t bytes) {
    h.on_sent(now, bytes);
    sent += bytes;
  };
  int step = 0;
  auto ack = [&](SimTime now, std::int64_t acked, double util) {
    ++step;
    h.on_ack(now, AckInfo{acked, util});
    s.new_ack(now.picoseconds(), acked, util, sent);
    EXPECT_DOUBLE_EQ(h.utilization(), s.u) << "ack " << step;
    EXPECT_DOUBLE_EQ(h.window_bytes(), s.w) << "ack " << step;
    EXPECT_DOUBLE_EQ(h.reference_window_bytes(), s.wc) << "ack " << step;
    EXPECT_EQ(h.stage(), s.inc_stage) << "ack " << step;
    EXPECT_EQ(h.last_update_seq(), s.last_update_seq) << "ack " << step;
    EXPECT_EQ(h.rate().bits_per_second(), std::llround(s.w * 8 / s.t)) << "ack " << step;
  };

  send(SimTime::zero(), 100'000);
  // 1: the first INT sample is taken whole; U = 1.2 > eta cuts Wc to Wc eta / U + W_AI.
  ack(SimTime::us(1), 1000, 1.2);
  EXPECT_NEAR(h.window_bytes(), 100'000 * 0.95 / 1.2 + 50, 1e-6);
  EXPECT_EQ(h.last_update_seq(), 100'000);
  const double wc1 = h.reference_window_bytes();
  // 2: within the same round (acked <= lastUpdateSeq): W moves, Wc does not. tau = T/4.
  ack(SimTime::ns(1500), 2000, 0.5);
  EXPECT_NEAR(h.utilization(), 0.75 * 1.2 + 0.25 * 0.5, 1e-12);
  EXPECT_EQ(h.reference_window_bytes(), wc1);
  EXPECT_LT(h.window_bytes(), wc1);  // U = 1.025 > eta still
  // 3: U falls below eta: W = Wc + W_AI, still without updating Wc or the stage.
  ack(SimTime::ns(2500), 100'000, 0.5);
  EXPECT_NEAR(h.window_bytes(), wc1 + 50, 1e-9);
  EXPECT_EQ(h.stage(), 0);
  // An ACK without INT is ignored entirely (tau is still measured from the last INT ACK).
  h.on_ack(SimTime::ns(2700), AckInfo{150'000, -1});
  EXPECT_NEAR(h.window_bytes(), wc1 + 50, 1e-9);
  // Rounds with U = 0.9 < eta: additive stages 1..5, then a multiplicative update (U / eta < 1
  // grows Wc) once incStage reaches max_stage, then additive again.
  SimTime t = SimTime::ns(3000);
  std::int64_t acked = 100'001;  // past lastUpdateSeq: each of these ACKs starts a new round
  const int expected_stage[] = {1, 2, 3, 4, 5, 0, 1, 2};
  for (int round = 0; round < 8; ++round) {
    send(t - SimTime::ns(500), 80'000);
    const double wc = h.reference_window_bytes();
    ack(t, acked, 0.9);
    EXPECT_EQ(h.stage(), expected_stage[round]) << "round " << round;
    if (round == 5) {
      EXPECT_NEAR(h.reference_window_bytes(), wc / (0.9 / 0.95) + 50, 1e-9);
    } else if (round > 0) {
      EXPECT_NEAR(h.reference_window_bytes(), wc + 50, 1e-9);
    }
    acked = sent + 1000;  // by the next round's ACK, all of this round and a packet more
    t += SimTime::us(2);
  }
  // A hard cut to the floor, then recovery within one RTT is only W_AI at a time.
  send(t, 1000);
  ack(t, acked, 1000);
  EXPECT_EQ(h.window(), 1000);
  // Same round, 3 T later: tau is capped at T, so U is this ACK's 0; W = Wc + W_AI.
  ack(t + SimTime::us(6), acked, 0.0);
  EXPECT_EQ(h.utilization(), 0.0);
  EXPECT_EQ(h.window(), 1050);
}

TEST(Hpcc, AnIdlePathNeverTakesTheWindowAboveOneBdp) {
  Hpcc h(HpccParams{}, kPath);
  std::int64_t sent = 0;
  // Rounds with U = 0: five additive stages, then the multiplicative one (with U = 0 it would
  // divide by zero), then additive again; all clamped at W_init.
  for (int round = 0; round < 8; ++round) {
    const std::int64_t acked = sent + 1;
    sent += 100'000;
    h.on_sent(SimTime::us(2 * round), 100'000);
    h.on_ack(SimTime::us(2 * round + 1), AckInfo{acked, 0.0});
    EXPECT_EQ(h.window(), 100'000) << "round " << round;
    EXPECT_EQ(h.reference_window_bytes(), h.initial_window_bytes()) << "round " << round;
    EXPECT_EQ(h.rate(), DataRate::gbps(400)) << "round " << round;
  }
  EXPECT_EQ(h.stage(), 2);
}

// Four senders share one bottleneck of capacity C; the switch's queue and INT utilization are a
// fluid model here. Every dt = T/10 each sender sends rate x dt, the queue integrates the excess
// and the switch computes U = q / (C T) + min(sum of rates, C) / C. An ACK comes back one RTT
// later with U and the sender's total sent at that time (the loop delay is T). The senders join
// one after the other, 20 RTTs apart, at line rate, so the shares start far apart and only the
// additive increase evens them out. W_AI follows the paper's W_init (1 - eta) / N for N = 8
// expected flows (2.5 Gb/s at 400G); with the default (N = 100) the shares are still 0.6-1.7 x
// C/4 after 200 RTTs here.
TEST(Hpcc, FourSendersConvergeToFullUseSmallQueueAndFairShares) {
  constexpr int kSenders = 4;
  constexpr int kStepsPerRtt = 10;
  constexpr int kRtts = 200;
  const double c = kHpccLine;
  const SimTime dt = kPath.base_rtt / kStepsPerRtt;
  const double t = kPath.base_rtt.seconds();
  HpccParams p;
  p.rate_ai = DataRate::bps(static_cast<std::int64_t>(kHpccLine * (1 - p.eta) / 8));
  struct Ack {
    std::int64_t acked;
    double utilization;
  };
  std::vector<std::unique_ptr<Hpcc>> senders;
  std::vector<std::int64_t> sent(kSenders, 0);
  std::vector<std::deque<Ack>> returning(kSenders);  // ACKs on their way back, one per step
  for (int i = 0; i < kSenders; ++i) senders.push_back(std::make_unique<Hpcc>(p, kPath));
  double queue = 0;                            // bits
  std::vector<double> mean_rate(kSenders, 0);  // over the last RTT
  double mean_total = 0;
  for (int k = 0; k < kRtts * kStepsPerRtt; ++k) {
    const SimTime now = dt * k;
    const bool last_rtt = k >= (kRtts - 1) * kStepsPerRtt;
    std::vector<double> rate(kSenders, 0);
    double total = 0;
    for (int i = 0; i < kSenders; ++i) {
      if (k < i * 20 * kStepsPerRtt) continue;
      rate[i] = static_cast<double>(senders[i]->rate().bits_per_second());
      const auto bytes = std::llround(rate[i] * dt.seconds() / 8);
      senders[i]->on_sent(now, bytes);
      sent[i] += bytes;
      total += rate[i];
      if (last_rtt) mean_rate[i] += rate[i] / kStepsPerRtt;
    }
    if (last_rtt) mean_total += total / kStepsPerRtt;
    queue = std::max(0.0, queue + (total - c) * dt.seconds());
    const double u = queue / (c * t) + std::min(total, c) / c;
    for (int i = 0; i < kSenders; ++i) {
      if (k < i * 20 * kStepsPerRtt) continue;
      returning[i].push_back(Ack{sent[i], u});
      if (static_cast<int>(returning[i].size()) <= kStepsPerRtt) continue;
      senders[i]->on_ack(now,
                         AckInfo{returning[i].front().acked, returning[i].front().utilization});
      returning[i].pop_front();
    }
  }
  EXPECT_GE(mean_total, 0.90 * c);
  EXPECT_LE(mean_total, 1.0 * c);
  EXPECT_LT(queue, 0.1 * c * t);
  for (int i = 0; i < kSenders; ++i) {
    EXPECT_NEAR(mean_rate[i], c / kSenders, 0.1 * c / kSenders) << "sender " << i;
  }
}

TEST(Hpcc, BaseRttParameterOverridesThePathAndRateAiDefaultsToLineOver2000) {
  HpccParams p;
  p.base_rtt = SimTime::us(8);
  Hpcc h(p, kPath);
  EXPECT_EQ(h.base_rtt(), SimTime::us(8));
  EXPECT_EQ(h.window(), 400'000);  // 400 Gb/s x 8 us
  EXPECT_EQ(h.rate(), DataRate::gbps(400));
  // W_AI = (line / 2000) x T = 200 Mb/s x 8 us = 200 B: one additive step after a cut shows it.
  h.on_sent(SimTime::zero(), 400'000);
  h.on_ack(SimTime::us(8), AckInfo{1000, 2 * 0.95});  // W = W_init / 2 + W_AI
  const double w1 = h.window_bytes();
  EXPECT_DOUBLE_EQ(w1, 200'000 + 200.0);
  h.on_ack(SimTime::us(16), AckInfo{2000, 0.0});  // tau = T: U = 0 < eta, same round
  EXPECT_DOUBLE_EQ(h.window_bytes() - w1, 200.0);
  // The rate follows W / T with this T.
  EXPECT_EQ(h.rate().bits_per_second(), std::llround(h.window_bytes() * 8 / 8e-6));

  // An explicit rate_ai: 1 Gb/s x 2 us (the path's RTT) = 250 B.
  HpccParams q;
  q.rate_ai = DataRate::gbps(1);
  Hpcc g(q, kPath);
  EXPECT_EQ(g.base_rtt(), SimTime::us(2));
  EXPECT_DOUBLE_EQ(g.additive_bytes(), 250.0);
  Hpcc d(HpccParams{}, kPath);
  EXPECT_DOUBLE_EQ(d.additive_bytes(), 50.0);
}

}  // namespace
}  // namespace stepsim::cc
