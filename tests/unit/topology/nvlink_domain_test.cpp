// topology.nvlink_domain (src/topology/nvlink_domain.cpp): GB200/GB300 NVL72 racks, 18 servers
// (compute trays) of 4 GPUs on one NVLink switch fabric. The domain is one server node whose
// NICs are its trays' NICs, cabled as without the domain; collectives inside it move no bytes
// on the NICs, and NVLS spans its 72 GPUs at its bound.
#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/topology/nic_map.hpp"
#include "tests/support/collective_run.hpp"
#include "tests/unit/topology/topology_test_util.hpp"

namespace stepsim::topology {
namespace {

const std::map<std::string, std::string> kTrays = {
    {"servers", "36"}, {"gpus_per_server", "4"}, {"switch_radix", "64"}, {"tiers", "2"}};

std::map<std::string, std::string> with_domain(std::map<std::string, std::string> p,
                                               const std::string& d) {
  p["nvlink_domain"] = d;
  return p;
}

TEST(NvlinkDomain, JoinsTraysIntoDomainsWithTheirNicsCabledAsBefore) {
  const Topology trays = testing::build("rail_optimized", kTrays);
  const Topology racks = testing::build("rail_optimized", with_domain(kTrays, "72"));
  testing::expect_consistent_wiring(racks);
  ASSERT_EQ(trays.server_count(), 36u);
  ASSERT_EQ(racks.server_count(), 2u);
  EXPECT_EQ(racks.servers_per_domain, 18u);
  EXPECT_EQ(racks.gpu_count(), 144u);
  EXPECT_EQ(racks.nic_count(), trays.nic_count());
  ASSERT_EQ(racks.links.size(), trays.links.size());
  ASSERT_EQ(racks.nodes.size(), trays.nodes.size() - 34);
  for (NodeId d = 0; d < 2; ++d) {
    EXPECT_EQ(racks.nodes[d].gpus, 72u);
    EXPECT_EQ(racks.nodes[d].port_count, 72u);
    for (std::uint32_t i = 0; i < 72; ++i) {
      // Tray k's NIC j is the domain's port 4k + j: the same link, on plane j, and GPU 4k + j
      // (the tray's own GPU j) uses it.
      const PortId p = racks.port_id(d, i);
      EXPECT_EQ(racks.ports[p].link, trays.ports[trays.port_id(d * 18 + i / 4, i % 4)].link);
      EXPECT_EQ(racks.nodes[racks.ports[racks.ports[p].peer].node].plane, i % 4);
      EXPECT_EQ(nic_of_gpu(racks.nodes[d], i), i);
    }
  }
  // Switches keep their order after the domains.
  for (NodeId v = 2; v < racks.nodes.size(); ++v) {
    EXPECT_EQ(racks.nodes[v].tier, trays.nodes[v + 34].tier);
    EXPECT_EQ(racks.nodes[v].plane, trays.nodes[v + 34].plane);
  }
}

TEST(NvlinkDomain, DefaultAndOneServerDomainsChangeNothing) {
  const Topology a = testing::build("fat_tree", {{"k", "8"}, {"gpus_per_server", "8"}});
  const Topology b =
      testing::build("fat_tree", {{"k", "8"}, {"gpus_per_server", "8"}, {"nvlink_domain", "8"}});
  EXPECT_EQ(a.nodes.size(), b.nodes.size());
  EXPECT_EQ(b.servers_per_domain, 1u);
  for (NodeId v = 0; v < a.nodes.size(); ++v) EXPECT_EQ(a.nodes[v].gpus, b.nodes[v].gpus);
}

TEST(NvlinkDomain, EveryGeneratorTakesIt) {
  const Topology f = testing::build("fat_tree", {{"k", "32"},
                                                 {"servers", "36"},
                                                 {"gpus_per_server", "4"},
                                                 {"nics_per_server", "4"},
                                                 {"tiers", "2"},
                                                 {"nvlink_domain", "72"}});
  EXPECT_EQ(f.server_count(), 2u);
  EXPECT_EQ(f.nodes[0].port_count, 72u);
  testing::expect_consistent_wiring(f);
  const Topology d = testing::build("dragonfly", {{"routers_per_group", "4"},
                                                  {"hosts_per_router", "2"},
                                                  {"global_links_per_router", "2"},
                                                  {"gpus_per_server", "4"},
                                                  {"nvlink_domain", "8"}});
  EXPECT_EQ(d.servers_per_domain, 2u);
  EXPECT_EQ(d.nodes[0].gpus, 8u);
  testing::expect_consistent_wiring(d);
}

TEST(NvlinkDomain, RefusesDomainsThatSplitServersOrDoNotFill) {
  EXPECT_NE(testing::build_error("rail_optimized", with_domain(kTrays, "70"))
                .find("topology.nvlink_domain: 70 is not a whole number of servers of 4 GPUs"),
            std::string::npos);
  auto odd = with_domain(kTrays, "72");
  odd["servers"] = "30";
  EXPECT_NE(testing::build_error("rail_optimized", odd)
                .find("18 servers per domain, which do not divide the 30 servers"),
            std::string::npos);
}

collective::CollectiveRun run(const Topology& topo, const std::vector<std::uint32_t>& gpus,
                              collective::Kind kind, std::int64_t bytes,
                              const std::string& algorithm) {
  collective::CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  collective::CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("gb200").value());
  p.algorithm = algorithm;
  auto comm = collective::make_communicator(topo, gpus);
  EXPECT_TRUE(comm.ok()) << (comm.ok() ? "" : comm.error().message);
  static const fabric::FabricParams fabric;
  return stepsim::testing::run_collective_once(topo, comm.value(), spec, p, fabric);
}

std::vector<std::uint32_t> first(std::uint32_t n) {
  std::vector<std::uint32_t> g(n);
  for (std::uint32_t i = 0; i < n; ++i) g[i] = i;
  return g;
}

TEST(NvlinkDomain, TpAndEpGroupsInsideADomainMoveNoBytesOnTheNics) {
  const Topology trays = testing::build("rail_optimized", kTrays);
  const Topology racks = testing::build("rail_optimized", with_domain(kTrays, "72"));
  // TP 8 over two trays: across trays without the domain, over NVLink inside it.
  const auto tp = run(racks, first(8), collective::Kind::kAllReduce, 8 << 20, "ring");
  ASSERT_TRUE(tp.result.complete());
  EXPECT_EQ(tp.result.network_bytes, 0u);
  EXPECT_GT(tp.result.nvlink_bytes, 0u);
  const auto split = run(trays, first(8), collective::Kind::kAllReduce, 8 << 20, "ring");
  ASSERT_TRUE(split.result.complete());
  EXPECT_GT(split.result.network_bytes, 0u);
  // EP 72: the AllToAll of a whole rack.
  const auto ep = run(racks, first(72), collective::Kind::kAllToAll, 72 << 12, "auto");
  ASSERT_TRUE(ep.result.complete());
  EXPECT_EQ(ep.result.network_bytes, 0u);
  EXPECT_GT(ep.result.nvlink_bytes, 0u);
  // Across the two racks, the same AllToAll of 144 GPUs crosses the NICs.
  const auto both = run(racks, first(144), collective::Kind::kAllToAll, 144 << 12, "auto");
  ASSERT_TRUE(both.result.complete());
  EXPECT_GT(both.result.network_bytes, 0u);
}

TEST(NvlinkDomain, NvlsOverSeventyTwoGpusFollowsItsBound) {
  const Topology racks = testing::build("rail_optimized", with_domain(kTrays, "72"));
  const std::int64_t S = std::int64_t{72} << 20;  // 72 MiB
  const auto r = run(racks, first(72), collective::Kind::kAllReduce, S, "nvls");
  ASSERT_TRUE(r.result.complete());
  EXPECT_EQ(r.result.network_bytes, 0u);
  EXPECT_EQ(r.result.nvlink_bytes, static_cast<std::uint64_t>(73) * S);
  const auto r2 = run(racks, first(72), collective::Kind::kAllReduce, 2 * S, "nvls");
  ASSERT_TRUE(r2.result.complete());
  // Each GPU's NVLink carries (n+1)/n S at the NVLS rate (NVLink 5's 900 GB/s per direction x
  // the NVLink and NVLS efficiencies): the run takes at least that, and each further S costs
  // that within 5% (the rest is a fixed pipeline fill of the 72 GPUs' pieces, under 25 us).
  collective::CollectiveParams p;
  p.apply_gpu(gpu::gpu_preset("gb200").value());
  const double rate =
      static_cast<double>(p.nvlink_payload().bits_per_second()) / 8 * p.nvls_efficiency;
  const double bound = 73.0 / 72.0 * static_cast<double>(S) / rate;
  const double t = static_cast<double>(r.result.time_ps) * 1e-12;
  const double t2 = static_cast<double>(r2.result.time_ps) * 1e-12;
  EXPECT_GE(t, bound);
  EXPECT_GE(t2 - t, bound);
  EXPECT_LE(t2 - t, 1.05 * bound);
  EXPECT_LE(t - bound, 25e-6);
}

}  // namespace
}  // namespace stepsim::topology
