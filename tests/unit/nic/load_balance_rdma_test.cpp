// Load balancing from the fabric, now under RDMA: tail latency of small messages on 8 QPs across
// a loaded leaf-spine (DOMAIN.md section 5's table gives the direction: spray < flowlet < ECMP).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "stepsim/nic/rdma_run.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

using testing::leaf_spine;

// Every connection posts one 64 KB WRITE every `interval` (the QPs spread over the interval);
// completions of connections [0, measured) are the latency samples (post to completion).
class PeriodicApp final : public RdmaApp {
 public:
  PeriodicApp(std::uint32_t measured, const std::vector<topology::NodeId>& server_of,
              SimTime interval, int rounds)
      : measured_(measured),
        server_of_(server_of),
        interval_(interval),
        rounds_(rounds),
        posted_(server_of.size(), 0) {}

  void on_start(Verbs& v) override {
    const auto n = static_cast<std::int64_t>(server_of_.size());
    for (std::uint32_t c = 0; c < server_of_.size(); ++c) {
      if (server_of_[c] == v.server()) v.schedule(interval_ * (c + 1) / n, c);
    }
  }
  void on_timer(Verbs& v, const AppTimer& timer) override {
    const std::uint32_t c = timer.tag;
    WorkRequest wr;
    wr.bytes = 65536;
    ++posted_[c];
    v.post(endpoint_of(c, 0), wr);
    if (posted_[c] < rounds_) v.schedule(interval_, c);
  }
  void on_cq(Verbs& v, std::uint32_t endpoint) override {
    std::array<Completion, 16> wc;
    std::size_t n;
    while ((n = v.poll_cq(endpoint, wc)) > 0) {
      for (std::size_t i = 0; i < n; ++i) {
        if ((endpoint >> 1) < measured_) {
          samples_.push_back((wc[i].done - wc[i].posted).picoseconds());
        }
      }
    }
  }
  // The samples (one rank: all are here), sorted.
  [[nodiscard]] std::vector<std::int64_t> sorted() const {
    auto s = samples_;
    std::sort(s.begin(), s.end());
    return s;
  }

 private:
  std::uint32_t measured_;
  std::vector<topology::NodeId> server_of_;
  SimTime interval_;
  int rounds_;
  std::vector<int> posted_;
  std::vector<std::int64_t> samples_;
};

struct Tail {
  double p50_us;
  double p99_us;
};

Tail run(const std::string& lb) {
  // 2 leaves x 4 spines, 4 hosts per leaf, 400G. Host h of leaf 0 -> host h of leaf 1 on 8 QPs
  // each, one 64 KB WRITE per QP every 16 us: 262 Gb/s per host, 65% of the four uplinks on
  // average. Host 0's QPs are measured. Pooled over four seeds (hashes and random choices).
  const auto topo = leaf_spine(2, 4, 4);
  std::vector<std::int64_t> all;
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    std::vector<Connection> conns;
    std::vector<topology::NodeId> server_of;
    for (topology::NodeId h = 0; h < 4; ++h) {
      for (std::uint32_t q = 0; q < 8; ++q) {
        const auto sport = static_cast<std::uint16_t>(49152 + 97 * seed + 8 * h + q);
        conns.push_back(Connection{topo.port_id(h, 0), topo.port_id(h + 4, 0), 3, sport, 0});
        server_of.push_back(h);
      }
    }
    NicParams nic;
    nic.cc.algorithm = "none";
    nic.retransmission = "selective";  // spraying reorders
    fabric::FabricParams fp;
    fp.lb.policy = lb;
    fp.lb.seed = seed;
    fp.seed = seed;
    PeriodicApp app(8, server_of, SimTime::us(16), 100);
    pdes::SerialSync sync;
    pdes::EngineOptions opt;
    opt.end = SimTime::ms(10);
    auto r = run_rdma(topo, conns, nic, fp, &app, sync, opt);
    EXPECT_TRUE(r.ok());
    const auto s = app.sorted();
    EXPECT_EQ(s.size(), 800u);
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  const auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(all.size()));
    return static_cast<double>(all[std::min(all.size() - 1, i)]) * 1e-6;
  };
  return {at(0.5), at(0.99)};
}

TEST(LoadBalanceRdma, TailLatencyOrdersEcmpAboveFlowletAboveSpray) {
  const Tail ecmp = run("ecmp");
  const Tail flowlet = run("flowlet");
  const Tail spray = run("spray");
  EXPECT_GT(ecmp.p99_us, flowlet.p99_us) << ecmp.p99_us << " " << flowlet.p99_us;
  EXPECT_GT(flowlet.p99_us, spray.p99_us) << flowlet.p99_us << " " << spray.p99_us;
  // Spraying keeps the tail near the median; ECMP's collisions do not.
  EXPECT_LT(spray.p99_us, 1.5 * spray.p50_us);
  EXPECT_GT(ecmp.p99_us, 1.5 * ecmp.p50_us);
  // Measured (four seeds pooled), P50/P99 in us: ECMP 11.2/247 (one seed's hashes overload an
  // uplink and PFC spreads it), flowlet 10.5/16.6, spray 9.0/11.5.
}

}  // namespace
}  // namespace stepsim::nic
