#pragma once
// The timeline of one NIC pipeline stage: its units' next free times. An item that enters the
// stage takes the unit that frees first, occupies it for the stage's cycles and leaves after the
// stage's latency (at least its occupancy). Items enter in time order, so each stage is FIFO and
// no event is needed per stage: the NIC reserves every stage of a packet when it builds it.

#include <algorithm>
#include <cstdint>

#include "stepsim/core/units.hpp"
#include "stepsim/nic/nic_params.hpp"

namespace stepsim::nic {

/// A stage's timing, resolved from StageParams at the NIC clock.
struct Stage {
  SimTime latency;
  SimTime occupancy;
  int units = 1;

  /// `sp` at the clock of `p`.
  [[nodiscard]] static Stage at_clock(const StageParams& sp, const NicParams& p) {
    return Stage{sp.latency, p.cycles(sp.cycles), sp.units};
  }
};

/// The per-unit free times of one stage (StageParams::units is at most kMaxUnits).
class StageTimeline {
 public:
  static constexpr int kMaxUnits = 8;

  /// Reserves one unit from `start` for `packets` packets' work (a cell at cell fidelity stands
  /// for several); returns when the item (its first packet) leaves the stage.
  SimTime reserve(const Stage& st, SimTime start, std::int64_t packets = 1) {
    int u = 0;
    for (int i = 1; i < st.units; ++i) {
      if (free_[i] < free_[u]) u = i;
    }
    // The first packet leaves when it would alone; the unit stays busy for all of them.
    const SimTime begin = std::max(start, free_[u]);
    free_[u] = begin + st.occupancy * packets;
    return begin + std::max(st.latency, st.occupancy);
  }
  /// When unit `u` is free again.
  [[nodiscard]] SimTime free_at(int u) const { return free_[u]; }

 private:
  SimTime free_[kMaxUnits];
};

}  // namespace stepsim::nic
