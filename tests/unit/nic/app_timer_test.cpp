// Application timers carry their payload in the timer's event: a collective's TimerPayload
// comes back at full width, and the field a hosting application sets leaves it alone.
#include <gtest/gtest.h>

#include <cstdint>

#include "stepsim/collective/algorithm_run.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/event.hpp"

namespace stepsim::nic {
namespace {

TEST(AppTimer, ATypedPayloadRidesInTheEventAtFullWidth) {
  const collective::TimerPayload in{
      .event = 3, .index = 0xfffffffeu, .edge = 3, .channel = 0xffffffffu, .piece = -1};
  AppTimer t{.tag = collective::kPayloadTag, .data = TimerData::of(in)};
  t.host = 0xabcdef01u;  // a hosting application's field
  pdes::Event ev;
  ev.set_payload(t);
  const AppTimer out = ev.payload_as<AppTimer>();
  EXPECT_EQ(out.host, 0xabcdef01u);
  EXPECT_EQ(out.tag, collective::kPayloadTag);
  EXPECT_EQ(out.data.as<collective::TimerPayload>(), in);
  const collective::TimerPayload big{.piece = std::int64_t{1} << 62};
  EXPECT_EQ(TimerData::of(big).as<collective::TimerPayload>(), big);
}

}  // namespace
}  // namespace stepsim::nic
