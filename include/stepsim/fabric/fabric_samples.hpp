#pragma once
/// Time series of the fabric (HDF5 /samples, docs/hdf5-schema.md): per port and per bin of
/// `interval` simulated time, the frame bytes the port sent, its largest egress backlog, the time
/// its egress was paused by PFC, the packets marked at its egress, the XOFF frames its ingress sent
/// and the packets it lost. The fabric model counts into the port's open bin (a compare and an add
/// per packet, no allocation); a bin closes when its port sees a later time, and the engine's
/// window hook (EngineOptions::at_window) drains every bin that ends at or before the global time
/// into this rank's rows, ordered by (bin, port). Attach one to a run with run_fabric or
/// nic::run_rdma; without one the model pays a null-pointer test per counter.
///
/// What adds up: per port, bytes over all bins is PortStats::bytes exactly (a frame's bytes are
/// spread over the bins its serialization spans, in proportion to time, rounded down with the
/// remainder in its last bin; a frame still on the wire when the run ends counts in the last
/// bin); paused_ps over all bins is PortStats::paused_ps for every
/// pause that ended (a pause still open when the run ends counts up to the run's end in the
/// samples, not in the counter); the largest queue_max_bytes is PortStats::max_queue; ecn_marks,
/// pause_sent and drops add up to their counters.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

/// One row of /samples/ports: what one port did in one bin (at least one field nonzero).
struct SampleRow {
  std::uint32_t bin = 0;              ///< the bin starts at bin x interval
  std::uint32_t port = 0;             ///< global port id
  std::uint64_t bytes = 0;            ///< frame bytes serialized within the bin
  std::uint64_t queue_max_bytes = 0;  ///< largest egress backlog (all classes) in the bin
  std::int64_t paused_ps = 0;         ///< egress paused by PFC within the bin (summed over classes)
  std::uint32_t ecn_marks = 0;        ///< packets marked CE at this egress
  std::uint32_t pause_sent = 0;       ///< XOFF frames this port's ingress sent
  std::uint32_t drops = 0;            ///< packets this port lost (any cause, as PortStats::drops)
  [[nodiscard]] bool operator<(const SampleRow& o) const {
    return bin != o.bin ? bin < o.bin : port < o.port;
  }
};

/// Smallest and largest sample interval.
inline constexpr SimTime kMinSampleInterval = SimTime::ns(10);
inline constexpr SimTime kMaxSampleInterval = SimTime::s(1);

/// A sample interval as text: a time from kMinSampleInterval to kMaxSampleInterval, or `0` / `off`
/// (zero: no samples). The error says what is allowed.
Result<SimTime> parse_sample_interval(const std::string& text);

class FabricSamples {
 public:
  /// `interval` > 0.
  explicit FabricSamples(SimTime interval);

  [[nodiscard]] SimTime interval() const { return SimTime::ps(interval_); }

  // ---- The model's side (FabricModel; each port only from its own LP's handler). ----
  /// Forgets everything; `ports[i]` is the global id of local port i, `slots[i]` the local node
  /// slot (LP) it belongs to, `nodes` the local node count.
  void setup(std::vector<topology::PortId> ports, std::vector<std::uint32_t> slots,
             std::uint32_t nodes);
  // Out of line on purpose: the model's hot functions keep only a null test and a call, so a
  // run without samples pays (almost) nothing.
  /// Local port `lp` started sending a frame of `bytes` at `now` that takes `wire` on the wire
  /// (preamble and gap included), leaving `backlog` bytes queued.
  void on_transmit(std::uint32_t lp, SimTime now, std::uint64_t bytes, SimTime wire,
                   std::int64_t backlog);
  /// A packet joined the egress queue of `lp` at `now` (CE-marked if `marked`): `backlog` bytes.
  void on_enqueue(std::uint32_t lp, SimTime now, std::int64_t backlog, bool marked);
  /// The egress backlog of `lp` changed to `backlog` bytes at `now` otherwise.
  void on_backlog(std::uint32_t lp, SimTime now, std::int64_t backlog);
  void on_pause_sent(std::uint32_t lp, SimTime now);
  void on_drop(std::uint32_t lp, SimTime now);
  /// One traffic class of `lp`'s egress was paused (`paused`) or resumed at `now`.
  void on_paused(std::uint32_t lp, SimTime now, bool paused);

  // ---- The engine's side (at_window: master thread, every worker idle). ----
  /// Closes every bin that ends at or before `now` (all bins if `last`; then `now` is the run's
  /// end, never() if unknown) and moves their rows to rows().
  void drain(SimTime now, bool last);
  /// Drained rows of this rank's ports not yet taken, ordered by (bin, port).
  [[nodiscard]] std::vector<SampleRow>& rows() { return rows_; }
  /// Bins before this one are complete: all their rows of this rank are drained.
  [[nodiscard]] std::uint64_t bins_drained() const { return drained_; }
  /// Bytes held (accumulators, closed and drained rows).
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  struct Acc {
    std::int64_t end = 0;   // end of the open bin (ps)
    std::int64_t mark = 0;  // pause time is counted up to here
    std::int64_t backlog = 0;
    std::int64_t qmax = 0;
    std::int64_t paused = 0;
    std::uint64_t bytes = 0;
    // The frame last sent: [frame_start, frame_end), frame_bytes, of which frame_done counted.
    std::int64_t frame_start = 0;
    std::int64_t frame_end = 0;
    std::uint64_t frame_bytes = 0;
    std::uint64_t frame_done = 0;
    std::uint32_t bin = 0;
    std::uint32_t paused_classes = 0;
    std::uint32_t ecn_marks = 0;
    std::uint32_t pause_sent = 0;
    std::uint32_t drops = 0;
    std::uint32_t slot = 0;
  };
  Acc& open(std::uint32_t lp, SimTime now) {
    Acc& a = acc_[lp];
    if (now.picoseconds() >= a.end) [[unlikely]]
      roll(lp, now.picoseconds());
    return a;
  }
  /// Closes the open bin of `lp` and any bins after it that end at or before `t`.
  void roll(std::uint32_t lp, std::int64_t t);
  /// Counts pause time of `a` up to `t` (within its open bin).
  static void credit(Acc& a, std::int64_t t) {
    a.paused += static_cast<std::int64_t>(a.paused_classes) * (t - a.mark);
    a.mark = t;
  }
  /// Counts the bytes of the frame on the wire serialized up to `t` (in the open bin). A frame's
  /// bytes are at most 4 MiB (a cell) and its wire time below 2^41 ps: the product fits.
  static void spread(Acc& a, std::int64_t t) {
    if (a.frame_done == a.frame_bytes) return;
    const std::uint64_t upto = t >= a.frame_end
                                   ? a.frame_bytes
                                   : a.frame_bytes * static_cast<std::uint64_t>(t - a.frame_start) /
                                         static_cast<std::uint64_t>(a.frame_end - a.frame_start);
    a.bytes += upto - a.frame_done;
    a.frame_done = upto;
  }
  /// Moves the open bin of `lp` to its node's closed rows if it holds anything.
  void emit(std::uint32_t lp);

  std::int64_t interval_;
  std::vector<Acc> acc_;                        // by local port
  std::vector<topology::PortId> ports_;         // by local port: global id
  std::vector<std::vector<SampleRow>> closed_;  // by local node: closed, not drained
  std::vector<SampleRow> rows_;                 // drained
  std::uint64_t drained_ = 0;
};

}  // namespace stepsim::fabric
