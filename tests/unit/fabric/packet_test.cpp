// The packet: routing fields the switches write never touch the transport header they carry,
// and a transport's view comes back whole after a trip through an engine event.
#include "stepsim/fabric/packet.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "src/nic/rc_wire.hpp"

namespace stepsim::fabric {
namespace {

TEST(Packet, RoutingFieldsAndTheTransportHeaderAreIndependent) {
  const nic::RcHeader h{.qp = 0xfffffff0u,
                        .psn = 0x89abcdefu,
                        .arg = 0xdeadbeefu,
                        .op = nic::kOpWriteImm,
                        .flags = nic::kLastPacket | nic::kAckRequest,
                        .int_echo = 0xfedc};
  Packet p;
  p.transport = TransportHeader::of(h);
  // What switches write, each at its widest value.
  p.bytes = (1u << 23) - 1;
  p.trimmed = 1;
  p.prio = 7;
  p.ecn_ce = 1;
  p.int_request = 1;
  p.in_network = 1;
  p.lane = 3;
  p.via = 0xfffe;
  p.telemetry = 0xffff;
  p.dst_nic = 0xffffffffu;
  p.tuple_hash = 0xffffffffu;
  pdes::Event ev;
  ev.set_payload(p);
  const Packet q = ev.payload_as<Packet>();
  const auto back = nic::rc_header(q);
  EXPECT_EQ(back.qp, h.qp);
  EXPECT_EQ(back.psn, h.psn);
  EXPECT_EQ(back.arg, h.arg);
  EXPECT_EQ(back.op, h.op);
  EXPECT_EQ(back.flags, h.flags);
  EXPECT_EQ(back.int_echo, h.int_echo);
  EXPECT_EQ(q.bytes, (1u << 23) - 1);
  EXPECT_EQ(q.trimmed, 1u);
  EXPECT_EQ(q.prio, 7u);
  EXPECT_EQ(q.lane, 3u);
  EXPECT_EQ(q.via, 0xfffe);
  EXPECT_EQ(q.telemetry, 0xffff);
  // A fresh packet is minimal-routed, on lane 0, with no marks.
  const Packet fresh;
  EXPECT_EQ(fresh.via, kNoDetour);
  EXPECT_EQ(fresh.lane, 0u);
  EXPECT_EQ(fresh.ecn_ce, 0u);
}

}  // namespace
}  // namespace stepsim::fabric
