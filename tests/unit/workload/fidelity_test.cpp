// The fidelities against each other: cell and analytical agree with packet level on a single
// uncongested transfer; cell agrees with packet level on whole steps (DESIGN.md: "cell" keeps
// the fabric's mechanisms) with far fewer events; analytical is a lower bound of packet, cell
// and ideal on the shipped scenarios, and its bulk (Kokkos) evaluation gives exactly what
// one-by-one evaluation gives.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/nic/rdma_host.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

Scenario load(const std::string& name) {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/" + name, {});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

TEST(Fidelity, ASingleUncongestedTransferAgrees) {
  // 256 MiB from GPU 0 of one server to GPU 0 of the other (nccl-tests' sendrecv on 2 GPUs):
  // latency plus bytes over the NIC's goodput, at packet level and in the alpha-beta model.
  const Scenario s = load("tiny.yaml");
  const auto topo = topology::load_topology(s.topology).value();
  const CommOp op{collective::Kind::kSendRecv, 256 << 20, {0, 8}, CommGroup::kPp};
  pdes::SerialSync sync;
  auto packet = make_packet_comm(topo, s, sync, pdes::EngineOptions{});
  auto analytical = make_analytical_comm(topo, s);
  Scenario sc = s;
  sc.fidelity = "cell";
  auto cell = make_packet_comm(topo, sc, sync, pdes::EngineOptions{});
  EXPECT_EQ(cell->name(), "cell");
  const CommCost p = packet->cost(op).value();
  const CommCost c = cell->cost(op).value();
  const double a = analytical->cost(op).value().seconds;
  EXPECT_LE(a, p.seconds);
  EXPECT_LE(a, c.seconds);
  EXPECT_NEAR(a / p.seconds, 1.0, 0.02);
  // 64 KiB cells carry the 4 KiB packets' headers and gaps: the same time within 0.5%, in
  // under a sixth of the events (the fabric's sixteenth, plus the collective's own events).
  EXPECT_NEAR(c.seconds / p.seconds, 1.0, 0.005);
  EXPECT_LT(c.events * 6, p.events);
}

TEST(Fidelity, CellAgreesWithPacketOnWholeSteps) {
  // Issue 7: cell-level step time within 5% of packet level (measured: within 0.1% on the
  // shipped 128- and 1,024-GPU scenarios, docs/fidelity.md); each group's busbw within 5% too.
  for (const char* name : {"tiny.yaml", "gpt-13b.yaml"}) {
    Scenario s = load(name);
    s.concurrent = false;
    const auto topo = topology::load_topology(s.topology).value();
    pdes::SerialSync sync;
    auto packet_comm = make_packet_comm(topo, s, sync, pdes::EngineOptions{});
    const auto packet = run_step(s, topo, *packet_comm).value();
    s.fidelity = "cell";
    auto cell_comm = make_packet_comm(topo, s, sync, pdes::EngineOptions{});
    const auto cell = run_step(s, topo, *cell_comm).value();
    EXPECT_NEAR(cell.step_s / packet.step_s, 1.0, 0.05) << name;
    for (int g = 0; g < kCommGroups; ++g) {
      if (packet.collectives[g] == 0) continue;
      EXPECT_NEAR(cell.busbw_gbs[g] / packet.busbw_gbs[g], 1.0, 0.05) << name << " group " << g;
    }
    EXPECT_EQ(cell.drops, 0U) << name;
    EXPECT_EQ(cell.retransmissions, 0U) << name;
    // Cells save the fabric's events; the collectives' own (NVLink pieces, the same at both
    // fidelities) are most of tiny's: its 1 MiB TP AllReduces run 8 channels (NCCL's
    // per-channel rule, issue 17), so there cells save ~40% of all events, elsewhere over half.
    const bool nvlink_heavy = std::string(name) == "tiny.yaml";
    EXPECT_LT(cell.events * (nvlink_heavy ? 3 : 2), packet.events * (nvlink_heavy ? 2 : 1)) << name;
  }
}

// Forwards to a model but never asks for the bulk pass: each collective is computed alone.
class OneByOne final : public CommModel {
 public:
  explicit OneByOne(CommModel& m) : m_(m) {}
  Result<CommCost> cost(const CommOp& op) override { return m_.cost(op); }
  [[nodiscard]] std::string name() const override { return "one-by-one"; }

 private:
  CommModel& m_;
};

TEST(Fidelity, AnalyticalIsALowerBoundAndBulkEqualsOneByOne) {
  for (const char* name : {"tiny.yaml", "gpt-13b.yaml"}) {
    Scenario s = load(name);
    s.concurrent = false;
    const auto topo = topology::load_topology(s.topology).value();
    auto analytical = make_analytical_comm(topo, s);
    const auto bulk = run_step(s, topo, *analytical).value();
    auto fresh = make_analytical_comm(topo, s);
    OneByOne lazy(*fresh);
    EXPECT_EQ(run_step(s, topo, lazy).value().step_s, bulk.step_s) << name;
    auto ideal_comm = make_ideal_comm(topo, s);
    const auto ideal = run_step(s, topo, *ideal_comm).value();
    pdes::SerialSync sync;
    auto packet_comm = make_packet_comm(topo, s, sync, pdes::EngineOptions{});
    const auto packet = run_step(s, topo, *packet_comm).value();
    EXPECT_LE(bulk.step_s, packet.step_s) << name;
    EXPECT_LE(bulk.step_s, ideal.step_s) << name;
    // Not only the step: every group's collectives are at least as fast as at packet level.
    for (int g = 0; g < kCommGroups; ++g) {
      if (packet.collectives[g] == 0) continue;
      EXPECT_GE(bulk.busbw_gbs[g], packet.busbw_gbs[g]) << name << " group " << g;
    }
    EXPECT_GT(bulk.step_s, bulk.compute_s) << name;  // it still adds communication
  }
}

TEST(Fidelity, TheBulkKernelIsTheChainOrAlphaPlusBytesOverRate) {
  const std::vector<kernels::AlphaBeta> in = {{1e-6, 1e9, 1e10, 0},
                                              {2e-6, 0, 1, 0},
                                              {0, 5, 2, 0},
                                              {1e-6, 1e3, 1e9, 5e-6},
                                              {0, 1e9, 1e9, 0.5}};
  std::vector<double> out(in.size());
  kernels::alpha_beta(in, out);
  EXPECT_DOUBLE_EQ(out[0], 1e-6 + 0.1);
  EXPECT_DOUBLE_EQ(out[1], 2e-6);
  EXPECT_DOUBLE_EQ(out[2], 2.5);
  EXPECT_DOUBLE_EQ(out[3], 5e-6);  // small: the chain of hops
  EXPECT_DOUBLE_EQ(out[4], 1.0);   // large: the bytes
}

TEST(Fidelity, TheAnalyticalChainCountsTheRingsHops) {
  // A ring AllReduce over 2 servers of 8 GPUs: 2(n-1) = 30 steps, 2 of every 16 over the
  // network; each step costs its transport latency plus the protocol's per-hop overhead.
  const Scenario s = load("tiny.yaml");
  const auto topo = topology::load_topology(s.topology).value();
  const fabric::Routing routing(topo);
  std::vector<std::uint32_t> gpus(16);
  for (std::uint32_t g = 0; g < 16; ++g) gpus[g] = g;
  const auto comm = collective::make_communicator(topo, gpus).value();
  collective::CollectiveParams p = s.coll;
  p.algorithm = "ring";
  p.protocol = "simple";
  const kernels::AlphaBeta ab = collective::analytical_bound(
      topo, routing, comm, collective::Kind::kAllReduce, 1 << 20, p, s.fabric);
  const double net =
      nic::RdmaHost::base_rtt(topo, routing, s.fabric, comm.gpus[0].nic, comm.gpus[8].nic)
          .seconds() /
      2;
  const double inter = 30.0 * 2 / 16;
  const double expect = p.base_latency().seconds() +
                        inter * (net + p.hop_overhead(false).seconds()) +
                        (30 - inter) * (p.nvlink_latency + p.hop_overhead(true)).seconds();
  EXPECT_NEAR(ab.chain_s, expect, 1e-12);
  EXPECT_DOUBLE_EQ(ab.bytes, 2.0 * 15 / 16 * (1 << 20));
}

}  // namespace
}  // namespace stepsim::workload
