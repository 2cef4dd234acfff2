#include "stepsim/fabric/load_balancer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>

#include "stepsim/core/crc32.hpp"

namespace stepsim::fabric {
namespace {

Packet packet(std::uint16_t sport) {
  Packet p;
  p.dst_nic = 20;
  p.tuple_hash = tuple_hash(10, p.dst_nic, sport, 0);
  return p;
}

constexpr std::array<std::uint32_t, 8> kPorts = {8, 9, 10, 11, 12, 13, 14, 15};
constexpr std::array<std::int64_t, 16> kIdle = {};

TEST(Crc32, MatchesTheStandardCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}), 0xCBF43926u);
}

TEST(RoceFlowLabel, IsTwentyBitsAndDependsOnTheQps) {
  const std::uint32_t a = roce_flow_label(0x100, 0x200, 0x0a000001, 0x0a000002);
  EXPECT_LT(a, 1u << 20);
  EXPECT_NE(a, roce_flow_label(0x101, 0x200, 0x0a000001, 0x0a000002));
  EXPECT_EQ(a, roce_flow_label(0x100, 0x200, 0x0a000001, 0x0a000002));
}

TEST(LoadBalancer, RegistryListsThePolicies) {
  EXPECT_EQ(load_balancer_names(),
            (std::vector<std::string>{"adaptive", "ecmp", "flowlet", "spray"}));
  LbParams p;
  p.policy = "random";
  const auto bad = make_load_balancer(p, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("allowed: adaptive, ecmp, flowlet, spray"), std::string::npos);
}

TEST(LoadBalancer, EcmpIsStablePerFlowAndSaltedPerSwitch) {
  LbParams p;
  auto a = make_load_balancer(p, 1).value();
  auto b = make_load_balancer(p, 2).value();
  int differ = 0;
  for (std::uint16_t sport = 49152; sport < 49152 + 64; ++sport) {
    const Packet pkt = packet(sport);
    const std::uint32_t first = a->choose({pkt, kPorts, SimTime::zero(), kIdle.data()});
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(a->choose({pkt, kPorts, SimTime::us(i), kIdle.data()}), first);
    }
    differ += first != b->choose({pkt, kPorts, SimTime::zero(), kIdle.data()}) ? 1 : 0;
  }
  EXPECT_GT(differ, 32);  // two switches' choices are not correlated (expected 56 of 64)
}

TEST(LoadBalancer, FlowletKeepsItsPortWithinTheTimeoutAndMayChangeAfterIt) {
  LbParams p;
  p.policy = "flowlet";
  p.flowlet_timeout = SimTime::us(10);
  auto lb = make_load_balancer(p, 7).value();
  const Packet pkt = packet(50000);
  SimTime t = SimTime::zero();
  std::uint32_t port = lb->choose({pkt, kPorts, t, kIdle.data()});
  std::set<std::uint32_t> after_gaps;
  for (int i = 0; i < 200; ++i) {
    // Gaps up to the timeout never change the port.
    for (int k = 0; k < 5; ++k) {
      t += SimTime::us(10);
      ASSERT_EQ(lb->choose({pkt, kPorts, t, kIdle.data()}), port) << "gap == timeout";
      t += SimTime::us(3);
      ASSERT_EQ(lb->choose({pkt, kPorts, t, kIdle.data()}), port);
    }
    // A longer gap starts a new flowlet on a random port.
    t += SimTime::us(11);
    port = lb->choose({pkt, kPorts, t, kIdle.data()});
    after_gaps.insert(port);
  }
  EXPECT_EQ(after_gaps.size(), kPorts.size());  // every port gets picked after some gap
}

TEST(LoadBalancer, AdaptivePicksTheLeastLoadedPort) {
  LbParams p;
  p.policy = "adaptive";
  auto lb = make_load_balancer(p, 1).value();
  std::array<std::int64_t, 16> queued{};
  for (std::uint32_t i = 0; i < 16; ++i) queued[i] = 100'000 + i;
  queued[13] = 5;
  EXPECT_EQ(kPorts[lb->choose({packet(50000), kPorts, SimTime::zero(), queued.data()})], 13u);
  queued[9] = 4;
  EXPECT_EQ(kPorts[lb->choose({packet(50000), kPorts, SimTime::zero(), queued.data()})], 9u);
}

TEST(LoadBalancer, SprayTakesEveryPortInTurn) {
  LbParams p;
  p.policy = "spray";
  auto lb = make_load_balancer(p, 1).value();
  std::array<int, 8> hits{};
  for (int i = 0; i < 80; ++i)
    ++hits[lb->choose({packet(50000), kPorts, SimTime::zero(), kIdle.data()})];
  for (int h : hits) EXPECT_EQ(h, 10);
}

}  // namespace
}  // namespace stepsim::fabric
