#include "stepsim/fabric/fabric_samples.hpp"

#include <algorithm>
#include <limits>

#include "stepsim/core/fatal.hpp"

namespace stepsim::fabric {

Result<SimTime> parse_sample_interval(const std::string& text) {
  if (text == "0" || text == "off") return SimTime::zero();
  auto t = parse_time(text);
  if (!t)
    return Error{t.error().message + " (allowed: a time from " + to_string(kMinSampleInterval) +
                 " to " + to_string(kMaxSampleInterval) + ", or 0 / off)"};
  if (*t < kMinSampleInterval || *t > kMaxSampleInterval) {
    return Error{"'" + text + "' is out of range (allowed: " + to_string(kMinSampleInterval) +
                 ".." + to_string(kMaxSampleInterval) + ", or 0 / off)"};
  }
  return *t;
}

FabricSamples::FabricSamples(SimTime interval) : interval_(interval.picoseconds()) {
  STEPSIM_CHECK(interval_ > 0, "a sample interval must be positive");
}

void FabricSamples::setup(std::vector<topology::PortId> ports, std::vector<std::uint32_t> slots,
                          std::uint32_t nodes) {
  STEPSIM_CHECK(ports.size() == slots.size(), "sampler: one node slot per port");
  ports_ = std::move(ports);
  acc_.assign(ports_.size(), Acc{});
  for (std::size_t i = 0; i < acc_.size(); ++i) {
    acc_[i].end = interval_;
    acc_[i].slot = slots[i];
  }
  closed_.assign(nodes, {});
  rows_.clear();
  drained_ = 0;
}

void FabricSamples::emit(std::uint32_t lp) {
  const Acc& a = acc_[lp];
  if (a.bytes == 0 && a.qmax == 0 && a.paused == 0 && a.ecn_marks == 0 && a.pause_sent == 0 &&
      a.drops == 0) {
    return;
  }
  closed_[a.slot].push_back(SampleRow{a.bin, ports_[lp], a.bytes,
                                      static_cast<std::uint64_t>(a.qmax), a.paused, a.ecn_marks,
                                      a.pause_sent, a.drops});
}

void FabricSamples::roll(std::uint32_t lp, std::int64_t t) {
  Acc& a = acc_[lp];
  const std::int64_t target = t / interval_;
  if (target > std::numeric_limits<std::uint32_t>::max()) [[unlikely]] {
    fatal("fabric samples: bin " + std::to_string(target) + " at " + to_string(SimTime::ps(t)) +
          " does not fit the 32-bit bin index of /samples (interval " +
          to_string(SimTime::ps(interval_)) + "); use a longer sample interval");
  }
  while (a.bin < target) {
    credit(a, a.end);
    spread(a, a.end);
    emit(lp);
    // A port that is neither paused, sending nor holding a queue did nothing in the bins up to
    // `target`.
    const bool idle = a.paused_classes == 0 && a.backlog == 0 && a.frame_done == a.frame_bytes;
    a.bin = idle ? static_cast<std::uint32_t>(target) : a.bin + 1;
    const std::int64_t start = static_cast<std::int64_t>(a.bin) * interval_;
    a.end = start + interval_;
    a.mark = start;
    a.qmax = a.backlog;  // the backlog at the bin's start
    a.bytes = 0;
    a.paused = 0;
    a.ecn_marks = a.pause_sent = a.drops = 0;
    spread(a, std::min(a.frame_end, a.end));
  }
}

void FabricSamples::on_transmit(std::uint32_t lp, SimTime now, std::uint64_t bytes, SimTime wire,
                                std::int64_t backlog) {
  Acc& a = open(lp, now);
  a.bytes += a.frame_bytes - a.frame_done;  // the previous frame ended (a port sends one at a time)
  a.frame_start = now.picoseconds();
  a.frame_end = a.frame_start + std::max<std::int64_t>(1, wire.picoseconds());
  a.frame_bytes = bytes;
  a.frame_done = 0;
  spread(a, std::min(a.frame_end, a.end));
  a.backlog = backlog;
}

void FabricSamples::on_enqueue(std::uint32_t lp, SimTime now, std::int64_t backlog, bool marked) {
  Acc& a = open(lp, now);
  a.backlog = backlog;
  if (backlog > a.qmax) a.qmax = backlog;
  if (marked) ++a.ecn_marks;
}

void FabricSamples::on_backlog(std::uint32_t lp, SimTime now, std::int64_t backlog) {
  Acc& a = open(lp, now);
  a.backlog = backlog;
  if (backlog > a.qmax) a.qmax = backlog;
}

void FabricSamples::on_pause_sent(std::uint32_t lp, SimTime now) {
  ++open(lp, now).pause_sent;
}

void FabricSamples::on_drop(std::uint32_t lp, SimTime now) {
  ++open(lp, now).drops;
}

void FabricSamples::on_paused(std::uint32_t lp, SimTime now, bool paused) {
  Acc& a = open(lp, now);
  credit(a, now.picoseconds());
  if (paused) {
    ++a.paused_classes;
  } else {
    STEPSIM_CHECK(a.paused_classes > 0, "sampler: a resume without a pause");
    --a.paused_classes;
  }
}

void FabricSamples::drain(SimTime now, bool last) {
  std::uint64_t target = std::numeric_limits<std::uint64_t>::max();  // bins before it close
  if (!last) {
    if (now.is_never()) return;
    target = static_cast<std::uint64_t>(now.picoseconds() / interval_);
    if (target <= drained_) return;  // at most one scan of the ports per bin
    for (std::uint32_t lp = 0; lp < acc_.size(); ++lp) {
      if (acc_[lp].bin < target) roll(lp, static_cast<std::int64_t>(target) * interval_);
    }
  } else {
    for (std::uint32_t lp = 0; lp < acc_.size(); ++lp) {
      Acc& a = acc_[lp];
      // An idle port's open bin is its last row: rolling it on to the run's end would only
      // close empty bins (and a drained engine's end is its horizon, `end`, an hour by default:
      // at a 10 ns interval a bin index past 32 bits).
      const bool idle = a.paused_classes == 0 && a.backlog == 0 && a.frame_done == a.frame_bytes;
      if (!now.is_never() && now.picoseconds() > 0) {
        // Up to the bin of the run's last instant (a bin starting at the end is empty).
        if (now.picoseconds() > a.end && !idle) roll(lp, now.picoseconds() - 1);
        if (now.picoseconds() > a.mark) credit(a, now.picoseconds());
      }
      a.bytes += a.frame_bytes - a.frame_done;  // a frame still on the wire: its last bin
      a.frame_done = a.frame_bytes;
      emit(lp);
      a = Acc{.end = std::numeric_limits<std::int64_t>::max(), .slot = a.slot};
    }
  }
  const std::size_t from = rows_.size();
  for (std::vector<SampleRow>& c : closed_) {
    // Rows of bins still open elsewhere stay (first), the closed ones move (in their order).
    auto closed = std::stable_partition(c.begin(), c.end(),
                                        [target](const SampleRow& r) { return r.bin >= target; });
    rows_.insert(rows_.end(), closed, c.end());
    c.erase(closed, c.end());
  }
  std::sort(rows_.begin() + static_cast<std::ptrdiff_t>(from), rows_.end());
  drained_ = last ? std::numeric_limits<std::uint64_t>::max() : target;
}

std::size_t FabricSamples::memory_bytes() const {
  std::size_t b = acc_.capacity() * sizeof(Acc) + ports_.capacity() * sizeof(topology::PortId) +
                  rows_.capacity() * sizeof(SampleRow);
  for (const auto& c : closed_) b += c.capacity() * sizeof(SampleRow) + sizeof(c);
  return b;
}

}  // namespace stepsim::fabric
