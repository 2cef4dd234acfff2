// The packet-level fabric across MPI ranks: identical results to a one-rank run in the same
// process, for each load-balancing policy, with PFC, ECN, faults and FEC losses on.
#include <gtest/gtest.h>

#include "stepsim/fabric/fabric_run.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "tests/support/small_topologies.hpp"

namespace stepsim::fabric {
namespace {

class Policies : public ::testing::TestWithParam<const char*> {};

TEST_P(Policies, MatchesAOneRankRunBitForBit) {
  const auto topo = testing::leaf_spine(4, 3, 4);
  TrafficSpec spec;
  spec.pattern = "permutation";
  spec.flow_bytes = 300'000;
  auto flows = make_flows(topo, spec).value();
  spec.pattern = "incast";
  spec.senders = 6;
  spec.window = 8 * 4096;  // window-based: acknowledgements cross the fabric too
  const std::vector<Flow> incast = make_flows(topo, spec).value();
  for (Flow f : incast) {
    f.id = static_cast<std::uint32_t>(flows.size());
    flows.push_back(f);
  }
  FabricParams p;
  p.lb.policy = GetParam();
  p.lb.flowlet_timeout = SimTime::us(1);
  p.ber_override = 2e-4;  // some FEC-corrected codewords, rare losses
  p.faults.push_back({FaultSpec::Kind::kDown, 17, SimTime::us(20), 0});
  p.faults.push_back({FaultSpec::Kind::kUp, 17, SimTime::us(60), 0});
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(5);

  pdes::SerialSync serial;
  const auto ref = run_fabric(topo, flows, p, serial, opt);
  ASSERT_TRUE(ref.ok());
  for (int threads : {1, 2}) {
    pdes::MpiSync sync;
    opt.threads = threads;
    const auto got = run_fabric(topo, flows, p, sync, opt);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->stats.digest, ref->stats.digest) << threads << " threads";
    EXPECT_EQ(got->stats.events, ref->stats.events);
    EXPECT_EQ(got->summary.packet_hops, ref->summary.packet_hops);
    EXPECT_EQ(got->summary.ecn_marks, ref->summary.ecn_marks);
    EXPECT_EQ(got->summary.pause_frames, ref->summary.pause_frames);
    EXPECT_EQ(got->summary.fec_corrected, ref->summary.fec_corrected);
    EXPECT_EQ(got->summary.fct_max_us, ref->summary.fct_max_us);
  }
  EXPECT_GT(ref->summary.ecn_marks, 0u);
  EXPECT_GT(ref->summary.fec_corrected, 0u);
}

TEST(FabricMpi, ValiantOnADragonflyMatchesAOneRankRun) {
  const auto topo =
      topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/dragonfly-small.yaml")
          .value();
  TrafficSpec spec;
  spec.pattern = "all_to_all";
  spec.flow_bytes = 8192;
  const std::vector<Flow> flows = make_flows(topo, spec).value();
  FabricParams p;
  p.routing = "valiant";
  p.lb.policy = "adaptive";
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(5);
  opt.partitioner = "metis";
  pdes::SerialSync serial;
  const auto ref = run_fabric(topo, flows, p, serial, opt);
  ASSERT_TRUE(ref.ok());
  pdes::MpiSync sync;
  const auto got = run_fabric(topo, flows, p, sync, opt);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->stats.digest, ref->stats.digest);
  EXPECT_EQ(got->summary.packet_hops, ref->summary.packet_hops);
  EXPECT_EQ(ref->summary.flows_complete, flows.size());
}

INSTANTIATE_TEST_SUITE_P(Fabric, Policies,
                         ::testing::Values("ecmp", "flowlet", "adaptive", "spray"));

}  // namespace
}  // namespace stepsim::fabric
