// The analytical fidelity against the others: it agrees with packet level on a single
// uncongested transfer, it is a lower bound of both packet and ideal on the shipped scenarios,
// and its bulk (Kokkos) evaluation gives exactly what one-by-one evaluation gives.
#include <gtest/gtest.h>

#include "stepsim/kernels/alpha_beta.hpp"
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
  const double p = packet->cost(op).value().seconds;
  const double a = analytical->cost(op).value().seconds;
  EXPECT_LE(a, p);
  EXPECT_NEAR(a / p, 1.0, 0.02);
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
    EXPECT_GT(bulk.step_s, bulk.compute_s) << name;  // it still adds communication
  }
}

TEST(Fidelity, TheBulkKernelIsAlphaPlusBytesOverRate) {
  const std::vector<kernels::AlphaBeta> in = {{1e-6, 1e9, 1e10}, {2e-6, 0, 1}, {0, 5, 2}};
  std::vector<double> out(in.size());
  kernels::alpha_beta(in, out);
  EXPECT_DOUBLE_EQ(out[0], 1e-6 + 0.1);
  EXPECT_DOUBLE_EQ(out[1], 2e-6);
  EXPECT_DOUBLE_EQ(out[2], 2.5);
}

}  // namespace
}  // namespace stepsim::workload
