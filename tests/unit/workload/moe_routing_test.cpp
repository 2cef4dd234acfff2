// moe.routing and moe.dropless: the zipf loads against the zipf pmf, the busiest EP rank, the
// capacity cap, file loads, and what the step does with them (E1's scenario, analytical).
#include "src/workload/moe/routing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/compute_cost.hpp"
#include "stepsim/workload/layer_comm.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

const std::string kRoutingE1 =
    std::string(STEPSIM_SOURCE_DIR) + "/workloads/validation/e1-qwen3-30b-a3b-ep16-h100.yaml";

Scenario routing_e1(const std::vector<std::string>& sets = {}) {
  auto s = load_scenario(kRoutingE1, sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.value();
}

double step_s(const std::vector<std::string>& sets, double* exposed_ep = nullptr) {
  std::vector<std::string> all = sets;
  all.emplace_back("memory.check=warn");
  const Scenario s = routing_e1(all);
  const auto topo = topology::load_topology(s.topology).value();
  EXPECT_TRUE(validate(s, topo).ok());
  auto comm = make_analytical_comm(topo, s);
  const StepResult r = run_step(s, topo, *comm).value();
  if (exposed_ep != nullptr) *exposed_ep = r.exposed_s[static_cast<int>(CommGroup::kEp)];
  return r.step_s;
}

TEST(MoeRouting, ZipfSharesAreThePmf) {
  for (const double alpha : {0.0, 0.5, 1.0, 2.0}) {
    const std::vector<double> p = zipf_pmf(128, alpha);
    double h = 0;
    for (int i = 1; i <= 128; ++i) h += std::pow(i, -alpha);
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
    EXPECT_NEAR(p[0], 1 / h, 1e-12);  // the busiest expert's share
    EXPECT_NEAR(p[9], std::pow(10, -alpha) / h, 1e-12);
    // A layer's loads are the pmf permuted, the permutation the layer's own.
    std::vector<double> l = zipf_layer_loads(128, alpha, 7);
    EXPECT_EQ(l, zipf_layer_loads(128, alpha, 7));
    std::sort(l.rbegin(), l.rend());
    EXPECT_EQ(l, p);
  }
  EXPECT_NE(zipf_layer_loads(128, 1.0, 0), zipf_layer_loads(128, 1.0, 1));
}

TEST(MoeRouting, BusiestRankWithOneExpertPerRankIsTheTopExpert) {
  // EP = experts: each rank one expert, so the busiest rank takes the top expert's share.
  Scenario s = routing_e1({"parallel.ep=16", "model.experts=16", "model.top_k=2",
                           "moe.routing=zipf:1.2", "moe.dropless=true"});
  const MoeLoad l = moe_load(s);
  EXPECT_NEAR(l.busiest_share, zipf_pmf(16, 1.2)[0], 1e-12);
  EXPECT_NEAR(l.tokens, 16 * zipf_pmf(16, 1.2)[0], 1e-12);
  EXPECT_EQ(l.dropped, 0);
}

TEST(MoeRouting, BalancedIsTheCapacityFactorAsBefore) {
  Scenario s = routing_e1({"model.capacity_factor=1.25"});
  EXPECT_EQ(moe_load(s).tokens, 1.25);
  EXPECT_DOUBLE_EQ(moe_load(s).busiest_share, 1.0 / 16);
  s.moe.dropless = true;  // no capacity: the even split
  EXPECT_EQ(moe_load(s).tokens, 1.0);
}

TEST(MoeRouting, CapacityCapsTheBusiestAndDropsTheRest) {
  const Scenario bal = routing_e1();
  const Scenario cap = routing_e1({"moe.routing=zipf:1.0"});
  const Scenario free = routing_e1({"moe.routing=zipf:1.0", "moe.dropless=true"});
  // With a capacity every expert is padded to it: the layer costs what the balanced one does.
  EXPECT_EQ(layer_costs(cap, true).fwd_s, layer_costs(bal, true).fwd_s);
  EXPECT_GT(layer_costs(free, true).fwd_s, 1.5 * layer_costs(bal, true).fwd_s);
  // Dropped: the shares over capacity 1/E, layer by layer.
  double dropped = 0;
  for (int l = 0; l < 48; ++l) {
    for (double f : zipf_layer_loads(128, 1.0, l)) dropped += std::max(0.0, f - 1.0 / 128);
  }
  EXPECT_NEAR(moe_load(cap).dropped, dropped / 48, 1e-12);
  EXPECT_GT(moe_load(cap).dropped, 0.3);
  EXPECT_EQ(moe_load(routing_e1({"moe.routing=zipf:0"})).dropped, 0);
}

TEST(MoeRouting, DispatchBytesFollowTheBusiestReceiver) {
  const Scenario bal = routing_e1();
  const Scenario free = routing_e1({"moe.routing=zipf:0.8", "moe.dropless=true"});
  const Placement place{1, 1, 16, 1};
  const std::vector<CommOp> a = layer_collectives(bal, place, 0, PassKind::kForward, true);
  const std::vector<CommOp> b = layer_collectives(free, place, 0, PassKind::kForward, true);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_NEAR(static_cast<double>(b.back().bytes) / static_cast<double>(a.back().bytes),
              moe_load(free).tokens, 1e-6);
}

TEST(MoeRouting, StepSlowsMonotonicallyInAlpha) {
  double ep0 = 0;
  const double bal = step_s({}, &ep0);
  double prev = step_s({"moe.dropless=true"});
  EXPECT_EQ(prev, bal);  // dropless and balanced at capacity factor 1: the same step
  std::printf("balanced: %.3f s (EP exposed %.3f s)\n", bal, ep0);
  for (const char* a : {"0.3", "0.6", "1.0", "1.4"}) {
    double ep = 0;
    const double t = step_s({std::string("moe.routing=zipf:") + a, "moe.dropless=true"}, &ep);
    std::printf("zipf:%s dropless: %.3f s (EP exposed %.3f s)\n", a, t, ep);
    EXPECT_GT(t, prev);
    EXPECT_GT(ep, ep0);
    prev = t;
  }
  EXPECT_EQ(step_s({"moe.routing=zipf:1.4"}), bal);  // the capacity caps it
}

TEST(MoeRouting, FileLoadsReadBack) {
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_moe_routing_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "loads.txt").string();
  {
    std::ofstream f(path);
    f << "# two layers of 4 experts\n3 1 0 0\n\n0.25, 0.25, 0.25, 0.25\n";
  }
  auto rows = read_routing("file:loads.txt", 4, 2, dir.string());
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], (std::vector<double>{0.75, 0.25, 0, 0}));
  EXPECT_EQ((*rows)[1], (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  EXPECT_TRUE(read_routing("file:" + path, 4, 1, "").ok() == false);  // 2 lines for 1 layer
  const auto wrong = read_routing("file:" + path, 5, 2, "");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find(path + ":2: "), std::string::npos) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("expected 5 loads"), std::string::npos);
  // A bad value names its line; bad routing texts name the key.
  {
    std::ofstream f(path);
    f << "1 2 x 4\n";
  }
  const auto bad = read_routing("file:" + path, 4, 1, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(path + ":1: "), std::string::npos);
  for (const char* r : {"zipf:", "zipf:-1", "zipf:1x", "uniform", "file:"}) {
    const auto e = read_routing(r, 4, 1, "");
    ASSERT_FALSE(e.ok()) << r;
    EXPECT_NE(e.error().message.find("moe.routing"), std::string::npos);
  }
  // Loaded in a scenario: a busiest rank of 3 / 4 with 2 experts per rank of 4.
  {
    std::ofstream f(path);
    f << "3 0 1 0\n";
  }
  Scenario s = routing_e1({"model.experts=4", "model.top_k=1", "parallel.ep=2", "moe.dropless=true",
                           "moe.routing=file:" + path});
  EXPECT_DOUBLE_EQ(moe_load(s).busiest_share, 0.75);
  EXPECT_DOUBLE_EQ(moe_load(s).tokens, 1.5);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stepsim::workload
