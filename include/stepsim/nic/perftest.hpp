#pragma once
/// perftest (ib_write_lat, ib_write_bw, ib_send_lat, ib_read_bw) as an application on the
/// simulated NICs: two NIC ports, one or more RC connections between them.
/// - Latency tests ping-pong one message on one QP: A posts, B answers when its receive
///   completion appears, A posts the next when B's answer completes; a sample is half the round
///   trip, as perftest reports it.
/// - Bandwidth tests keep `tx_depth` work requests outstanding per QP and repost on each
///   completion until `iterations` per QP are done; a sample is a message's post-to-completion
///   time; bandwidth is the payload over the time from the first post to the last completion.
/// - Bidirectional (bandwidth tests, perftest's -b): the server also sends to the client on the
///   same QPs, with the same depth and count; the result holds both sides' messages.
/// - Duration (perftest's -D): instead of `iterations`, each side reposts (latency tests: the
///   client starts rounds) until `duration` has passed since its first post. Bandwidth tests
///   count the messages completed within the duration, over the duration (perftest's sample
///   window); a latency test's last round completes and counts.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

/// perftest's tests. Atomics (fetch-and-add, 8 B) run as 8-byte RDMA Reads: the same request and
/// response on the wire; the responder's atomic unit is not modelled.
enum class PerftestKind : std::uint8_t {
  kWriteLat,
  kWriteBw,
  kSendLat,
  kReadBw,
  kSendBw,
  kReadLat,
  kAtomicBw,
  kAtomicLat
};
/// The names, in the enum's order: write_lat, write_bw, send_lat, read_bw, send_bw, read_lat,
/// atomic_bw, atomic_lat.
std::vector<std::string> perftest_kind_names();
/// Latency tests: write_lat and send_lat ping-pong (half the round trip), read_lat and
/// atomic_lat one-sided (the whole round trip, as perftest reports them).
[[nodiscard]] bool perftest_is_latency(PerftestKind k);
[[nodiscard]] bool perftest_one_sided_latency(PerftestKind k);
Result<PerftestKind> parse_perftest_kind(const std::string& name);
std::string perftest_kind_name(PerftestKind k);

struct PerftestSpec {
  PerftestKind kind = PerftestKind::kWriteLat;
  std::int64_t bytes = 2;
  int qps = 1;
  int iterations = 1000;
  int tx_depth = 128;      ///< bandwidth tests: outstanding work requests per QP
  topology::PortId a = 0;  ///< the client's NIC port
  topology::PortId b = 0;  ///< the server's NIC port
  std::uint8_t prio = 3;
  std::uint16_t first_sport = 49152;  ///< QP i uses UDP source port first_sport + i
  bool bidirectional = false;         ///< bandwidth tests: the server sends too
  SimTime duration;                   ///< > 0: post for this long instead of `iterations`
};

struct PerftestResult {
  std::vector<std::int64_t> samples_ps;  ///< sorted
  /// Bandwidth tests: every work request's post and completion times, each sorted (perftest's
  /// tposted and tcompleted, from which it computes the peak bandwidth).
  std::vector<std::int64_t> posted_ps;
  std::vector<std::int64_t> completed_ps;
  std::int64_t messages = 0;
  std::int64_t bytes = 0;
  std::int64_t first_post_ps = 0;
  std::int64_t last_done_ps = 0;
  std::int64_t errors = 0;  ///< completions with an error status
  [[nodiscard]] double percentile_us(double q) const;
  [[nodiscard]] double average_us() const;
  [[nodiscard]] double gbps() const;
  [[nodiscard]] double mpps() const;
  /// perftest's BW peak: the most messages per second over any run of consecutive messages,
  /// (j - i + 1) / (completed[j] - posted[i]), in messages per second (0 without samples).
  [[nodiscard]] double peak_messages_per_s() const;
};

class Perftest final : public RdmaApp {
 public:
  /// `spec.a` and `spec.b` are NIC ports of `topo` (checked by run_rdma).
  Perftest(PerftestSpec spec, const topology::Topology& topo);

  /// The connections the test runs on (QP i is connection i).
  [[nodiscard]] std::vector<Connection> connections() const;
  void on_start(Verbs& verbs) override;
  void on_cq(Verbs& verbs, std::uint32_t endpoint) override;
  /// Gathers the samples from whichever rank ran the client (collective over `sync`).
  [[nodiscard]] PerftestResult result(pdes::Sync& sync) const;

 private:
  struct Side {
    std::vector<int> posted;  // per QP: work requests posted
    std::vector<std::int64_t> samples;
    std::vector<std::int64_t> post_times;  // bandwidth tests, in order
    std::vector<std::int64_t> done_times;  // bandwidth tests, in order
    std::int64_t first_post = -1;
    std::int64_t last_done = 0;
    std::int64_t messages = 0;
    std::int64_t errors = 0;
    std::int64_t round_start = 0;  // latency tests: when the client posted this round
    bool client = false;
    bool ran = false;
  };
  [[nodiscard]] bool is_latency() const { return perftest_is_latency(spec_.kind); }
  void post(Verbs& verbs, Side& side, int qp);
  void start_bandwidth(Verbs& verbs, Side& side);
  /// Whether `side` posts another work request on `qp` (iterations or duration left).
  [[nodiscard]] bool more(const Verbs& verbs, const Side& side, int qp) const;

  PerftestSpec spec_;
  topology::NodeId server_a_ = 0;
  topology::NodeId server_b_ = 0;
  Side a_;
  Side b_;
};

}  // namespace stepsim::nic
