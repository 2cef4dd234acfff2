// DCQCN's two parameter sets over the RDMA transport at 400G and 1.6T: the NIC firmware's
// defaults (preset mlx5, the default) keep an 8-to-1 incast's bottleneck and an oversubscribed
// permutation's uplinks busy, with fair shares (no QP stalls at the rate floor: the rate limiter
// applies a raised rate at once, and the RTO counts from a resend's departure); the paper's 40G
// set (sigcomm15) leaves a 400G bottleneck more than half idle.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "tests/support/incast.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::nic {
namespace {

using testing::incast_connections;
using testing::leaf_spine;

struct DcqcnOutcome {
  RdmaRun run;
  BulkResult bulk;
};

// Payload rate (Gb/s) of a port carrying 64 KiB WRITEs in 4 KiB packets (62 B headers, 20 B gap).
double dp_goodput(double port_gbps) {
  return port_gbps * 4096 / (4096 + 62 + 20);
}

DcqcnOutcome dp_run_bulk(const topology::Topology& topo, const std::vector<Connection>& conns,
                         const std::vector<Transfer>& transfers, const std::string& preset,
                         SimTime every, SimTime end, const std::string& lb = "ecmp") {
  NicParams nic;
  auto table = nic_param_table(nic);
  EXPECT_TRUE(table.apply("cc.algorithm=dcqcn").ok());
  EXPECT_TRUE(table.apply("cc.dcqcn.preset=" + preset).ok());
  fabric::FabricParams fp;
  EXPECT_TRUE(fabric::fabric_param_table(fp).apply("fabric.lb=" + lb).ok());
  BulkApp app(transfers, conns, topo, every);
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = end;
  auto r = run_rdma(topo, conns, nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return DcqcnOutcome{std::move(r).value(), app.result(sync)};
}

// `senders` hosts of one leaf write long streams into host 0 of the same leaf.
DcqcnOutcome dp_incast(const char* port, int senders, const std::string& preset, SimTime every,
                       SimTime end) {
  const auto topo = leaf_spine(1, 1, static_cast<std::uint32_t>(senders) + 1, port);
  const std::vector<Connection> conns = incast_connections(topo, senders);
  std::vector<Transfer> transfers;
  for (int i = 0; i < senders; ++i) {
    Transfer t;
    t.connection = static_cast<std::uint32_t>(i);
    t.messages = 1'000'000;  // more than the run can send: a stream
    transfers.push_back(t);
  }
  return dp_run_bulk(topo, conns, transfers, preset, every, end);
}

// Two leaves of `hosts` hosts and two spines: host h of leaf 0 and host h of leaf 1 stream to each
// other, packets sprayed over both spines (selective repeat). The uplinks are 2:1 oversubscribed
// (`hosts` = 4): every uplink is a congestion point.
DcqcnOutcome dp_permutation(const char* port, const std::string& preset, SimTime every,
                            SimTime end) {
  constexpr std::uint32_t kHosts = 4;
  const auto topo = leaf_spine(2, 2, kHosts, port);
  std::vector<Connection> conns;
  std::vector<Transfer> transfers;
  for (std::uint32_t h = 0; h < kHosts; ++h) {
    for (int dir = 0; dir < 2; ++dir) {
      Connection c;
      const std::uint32_t from = dir == 0 ? h : kHosts + h;
      const std::uint32_t to = dir == 0 ? kHosts + h : h;
      c.a = topo.port_id(static_cast<topology::NodeId>(from), 0);
      c.b = topo.port_id(static_cast<topology::NodeId>(to), 0);
      c.entropy = static_cast<std::uint16_t>(40000 + 2 * h + dir);
      Transfer t;
      t.connection = static_cast<std::uint32_t>(conns.size());
      t.messages = 1'000'000;
      conns.push_back(c);
      transfers.push_back(t);
    }
  }
  return dp_run_bulk(topo, conns, transfers, preset, every, end, "spray");
}

double dp_total_gbps(const DcqcnOutcome& x, std::size_t k0, std::size_t k1, SimTime every) {
  double s = 0;
  for (std::size_t t = 0; t < x.bulk.bytes.size(); ++t) s += x.bulk.gbps(t, k0, k1, every);
  return s;
}

std::int64_t dp_errors(const DcqcnOutcome& x) {
  std::int64_t n = 0;
  for (std::int64_t e : x.bulk.errors) n += e;
  return n;
}

// Target: the bottleneck busy at >= 95% of its goodput once the first cuts are over (DCQCN's
// goal is full utilization with low queues; the firmware's set recovers in 32 KB byte-counter
// steps towards an unclamped target, so it may rely on PFC to hold the queue): measured from
// 0.5 ms to the end, after which every CNP-driven cut has been answered.
TEST(DcqcnPresets, FirmwareSetKeepsAnIncastBottleneckBusyAt400GAnd1600G) {
  const SimTime every = SimTime::us(50);
  for (const auto& [port, gbps] : {std::pair{"400G", 400.0}, std::pair{"1.6T", 1600.0}}) {
    const DcqcnOutcome r = dp_incast(port, 8, "mlx5", every, SimTime::us(2100));
    EXPECT_EQ(dp_errors(r), 0) << port;
    const double g = dp_total_gbps(r, 10, 40, every);
    EXPECT_GE(g, 0.95 * dp_goodput(gbps)) << port << ": " << g;
    EXPECT_LE(g, 1.001 * dp_goodput(gbps)) << port << ": " << g;
    std::uint64_t cnps = 0;
    for (const QpStats& e : r.run.rdma.endpoints) cnps += e.cnps_received;
    EXPECT_GT(cnps, 100u) << port;  // the congestion control acted
    // No QP stalls: the shares stay fair in every 250 us window.
    for (std::size_t k = 10; k < 40; k += 5) {
      std::vector<double> rates;
      for (std::size_t t = 0; t < r.bulk.bytes.size(); ++t) {
        rates.push_back(r.bulk.gbps(t, k, k + 5, every));
      }
      EXPECT_GE(jain_index(rates), 0.95) << port << " " << k;
    }
  }
}

TEST(DcqcnPresets, FirmwareSetKeepsAnOversubscribedPermutationsUplinksBusy) {
  const SimTime every = SimTime::us(50);
  for (const auto& [port, gbps] : {std::pair{"400G", 400.0}, std::pair{"1.6T", 1600.0}}) {
    const DcqcnOutcome r = dp_permutation(port, "mlx5", every, SimTime::us(2100));
    EXPECT_EQ(dp_errors(r), 0) << port;
    // Each direction crosses two uplinks: 2 x goodput in each of the two directions.
    const double g = dp_total_gbps(r, 10, 40, every);
    EXPECT_GE(g, 0.95 * 4 * dp_goodput(gbps)) << port << ": " << g;
    EXPECT_LE(g, 1.001 * 4 * dp_goodput(gbps)) << port << ": " << g;
  }
}

// The paper's set was tuned for 40G: its additive step (40 Mb/s per 55 us) is 0.01% of a 400G
// port and its target is clamped at every cut, so the 400G incast's bottleneck idles more than
// half the time (measured 166 Gb/s of 392; the firmware's set 392).
TEST(DcqcnPresets, PaperSetLeavesA400GIncastBottleneckMoreThanHalfIdle) {
  const SimTime every = SimTime::us(50);
  const DcqcnOutcome paper = dp_incast("400G", 8, "sigcomm15", every, SimTime::us(2100));
  const DcqcnOutcome firmware = dp_incast("400G", 8, "mlx5", every, SimTime::us(2100));
  const double p = dp_total_gbps(paper, 10, 40, every);
  const double f = dp_total_gbps(firmware, 10, 40, every);
  EXPECT_LT(p, 0.5 * dp_goodput(400)) << p;
  EXPECT_GE(f, 0.95 * dp_goodput(400)) << f;
}

}  // namespace
}  // namespace stepsim::nic
