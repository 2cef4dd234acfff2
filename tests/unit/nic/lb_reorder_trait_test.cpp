// Every registered load-balancing policy runs bulk RDMA traffic over two paths of different
// latency; whether the receivers saw a flow's packets out of order must be what the policy
// declares (LbTraits::reorders), which transport.retransmission=auto trusts.
#include <gtest/gtest.h>

#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/bulk_app.hpp"
#include "stepsim/nic/rdma_run.hpp"
#include "stepsim/phy/port_rate.hpp"

namespace stepsim::nic {
namespace {

constexpr std::uint32_t kTraitHosts = 3;  // per leaf: three senders share two uplinks

// Two leaves of three servers each and two spines; the cables to spine 1 are 200 m longer
// (1 us more each way), so packets of one flow that take both spines arrive out of order.
topology::Topology trait_two_paths() {
  using topology::CableKind;
  using topology::NodeKind;
  topology::Topology t;
  t.name = "two-paths";
  t.generator = "test";
  t.port_types.push_back(phy::standard_port("400G").value());
  for (std::uint32_t l = 0; l < 2; ++l) {
    for (std::uint32_t h = 0; h < kTraitHosts; ++h) t.add_node(NodeKind::kServer, 0, 1, l, 0, 1);
  }
  const topology::NodeId leaf = 2 * kTraitHosts;
  const topology::NodeId spine = leaf + 2;
  for (std::uint32_t l = 0; l < 2; ++l) t.add_node(NodeKind::kSwitch, 1, kTraitHosts + 2, l);
  for (std::uint32_t s = 0; s < 2; ++s) t.add_node(NodeKind::kSwitch, 2, 2);
  for (std::uint32_t l = 0; l < 2; ++l) {
    for (std::uint32_t h = 0; h < kTraitHosts; ++h) {
      t.connect(l * kTraitHosts + h, 0, leaf + l, h, 0, CableKind::kDac, Length::m(2));
    }
    for (std::uint32_t s = 0; s < 2; ++s) {
      t.connect(leaf + l, kTraitHosts + s, spine + s, l, 0, CableKind::kOptics,
                Length::m(20 + 200 * static_cast<std::int64_t>(s)));
    }
  }
  return t;
}

struct ReorderOutcome {
  std::uint64_t out_of_order = 0;  ///< at the receivers
  std::uint64_t drops = 0;         ///< anywhere in the fabric
  bool complete = true;
};

// Host h of leaf 0 sends 8 MiB to host h of leaf 1, under `policy`, with selective repeat (it
// places and counts packets past a hole) and no congestion control (queues build at the uplinks).
ReorderOutcome run_policy(const std::string& policy) {
  const topology::Topology topo = trait_two_paths();
  std::vector<Connection> conns;
  std::vector<Transfer> transfers;
  for (std::uint32_t h = 0; h < kTraitHosts; ++h) {
    Connection c;
    c.a = topo.port_id(h, 0);
    c.b = topo.port_id(kTraitHosts + h, 0);
    c.entropy = static_cast<std::uint16_t>(50000 + 17 * h);
    conns.push_back(c);
    Transfer t;
    t.connection = h;
    t.message_bytes = 1 << 20;
    t.messages = 8;
    t.depth = 8;
    transfers.push_back(t);
  }
  NicParams nic;
  nic.cc.algorithm = "none";
  nic.retransmission = "selective";
  fabric::FabricParams fp;
  fp.lb.policy = policy;
  BulkApp app(transfers, conns, topo, SimTime::zero());
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = SimTime::ms(20);
  auto r = run_rdma(topo, conns, nic, fp, &app, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  ReorderOutcome o;
  if (!r.ok()) return o;
  for (std::uint32_t h = 0; h < kTraitHosts; ++h) {
    o.out_of_order += r->rdma.endpoints[endpoint_of(h, 1)].out_of_order;
  }
  for (const fabric::PortStats& p : r->fabric.ports) {
    o.drops += p.drops();
  }
  for (std::int64_t done : app.result(sync).done_ps) o.complete = o.complete && done >= 0;
  return o;
}

TEST(LbReorderTrait, EveryPolicyReordersExactlyWhenItDeclaresIt) {
  const std::vector<std::string> names = fabric::load_balancer_names();
  ASSERT_GE(names.size(), 2u);
  int reordering = 0;
  for (const std::string& name : names) {
    const ReorderOutcome o = run_policy(name);
    ASSERT_TRUE(o.complete) << name;
    ASSERT_EQ(o.drops, 0u) << name << ": a hole must come from reordering, not from a loss";
    const bool declared = fabric::lb_reorders(name);
    reordering += declared ? 1 : 0;
    if (declared) {
      EXPECT_GT(o.out_of_order, 0u) << name << " declares that it reorders but did not";
    } else {
      EXPECT_EQ(o.out_of_order, 0u) << name << " reordered packets without declaring "
                                    << "LbTraits::reorders at its registration";
    }
  }
  EXPECT_GT(reordering, 0);                               // the run can show reordering
  EXPECT_LT(reordering, static_cast<int>(names.size()));  // and its absence
  EXPECT_FALSE(fabric::lb_reorders("no-such-policy"));
}

TEST(LbReorderTrait, AutoRetransmissionFollowsTheTrait) {
  for (const std::string& name : fabric::load_balancer_names()) {
    EXPECT_EQ(resolve_retransmission("auto", name), fabric::lb_reorders(name) ? "selective" : "gbn")
        << name;
  }
  EXPECT_EQ(resolve_retransmission("gbn", "spray"), "gbn");  // an explicit choice stands
}

}  // namespace
}  // namespace stepsim::nic
