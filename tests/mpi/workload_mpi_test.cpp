// A training step at packet fidelity across MPI ranks: the same step time, breakdown and digest
// as a one-rank run.
#include <gtest/gtest.h>

#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

TEST(Workload, TheTinyStepMatchesAOneRankRunBitForBit) {
  const Scenario s =
      load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", {}).value();
  const auto topo = topology::load_topology(s.topology).value();
  pdes::SerialSync serial;
  pdes::EngineOptions opt;
  auto ref_comm = make_packet_comm(topo, s, serial, opt);
  const auto ref = run_step(s, topo, *ref_comm).value();
  for (int threads : {1, 2}) {
    pdes::MpiSync sync;
    opt.threads = threads;
    auto comm = make_packet_comm(topo, s, sync, opt);
    const auto got = run_step(s, topo, *comm).value();
    EXPECT_EQ(got.digest, ref.digest) << threads;
    EXPECT_EQ(got.step_s, ref.step_s);
    EXPECT_EQ(got.events, ref.events);
    EXPECT_EQ(got.colls.size(), ref.colls.size());
  }
}

}  // namespace
}  // namespace stepsim::workload
