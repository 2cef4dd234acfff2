#include "stepsim/nic/perftest.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "stepsim/core/percentile.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::nic {

namespace {

constexpr std::array<const char*, 8> kKindNames{"write_lat", "write_bw", "send_lat",  "read_bw",
                                                "send_bw",   "read_lat", "atomic_bw", "atomic_lat"};

}  // namespace

std::vector<std::string> perftest_kind_names() {
  return {kKindNames.begin(), kKindNames.end()};
}

Result<PerftestKind> parse_perftest_kind(const std::string& name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (name == kKindNames[i]) return static_cast<PerftestKind>(i);
  }
  std::string allowed;
  for (const char* n : kKindNames) allowed += (allowed.empty() ? "" : ", ") + std::string(n);
  return Error{"unknown perftest '" + name + "' (allowed: " + allowed + ")"};
}

std::string perftest_kind_name(PerftestKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kKindNames.size() ? kKindNames[i] : "?";
}

bool perftest_is_latency(PerftestKind k) {
  return k == PerftestKind::kWriteLat || k == PerftestKind::kSendLat ||
         perftest_one_sided_latency(k);
}

bool perftest_one_sided_latency(PerftestKind k) {
  return k == PerftestKind::kReadLat || k == PerftestKind::kAtomicLat;
}

Perftest::Perftest(PerftestSpec spec, const topology::Topology& topo) : spec_(spec) {
  server_a_ = spec_.a < topo.ports.size() ? topo.ports[spec_.a].node : 0;
  server_b_ = spec_.b < topo.ports.size() ? topo.ports[spec_.b].node : 0;
  a_.client = true;
  a_.posted.assign(static_cast<std::size_t>(spec_.qps), 0);
  b_.posted.assign(static_cast<std::size_t>(spec_.qps), 0);
}

std::vector<Connection> Perftest::connections() const {
  std::vector<Connection> out;
  for (int i = 0; i < spec_.qps; ++i) {
    Connection c;
    c.a = spec_.a;
    c.b = spec_.b;
    c.prio = spec_.prio;
    c.entropy = static_cast<std::uint16_t>(spec_.first_sport + i);
    out.push_back(c);
  }
  return out;
}

void Perftest::post(Verbs& verbs, Side& side, int qp) {
  WorkRequest wr;
  wr.bytes = spec_.bytes;
  wr.wr_id = static_cast<std::uint64_t>(side.posted[static_cast<std::size_t>(qp)]++);
  switch (spec_.kind) {
    case PerftestKind::kWriteLat:
      wr.opcode = Opcode::kWriteImm;
      wr.signaled = false;  // the round trip is timed by the receive completions
      break;
    case PerftestKind::kSendLat:
      wr.opcode = Opcode::kSend;
      wr.signaled = false;
      break;
    case PerftestKind::kWriteBw:
      wr.opcode = Opcode::kWrite;
      break;
    case PerftestKind::kSendBw:
      wr.opcode = Opcode::kSend;
      break;
    case PerftestKind::kReadBw:
    case PerftestKind::kReadLat:
    case PerftestKind::kAtomicBw:
    case PerftestKind::kAtomicLat:
      wr.opcode = Opcode::kRead;  // an atomic is an 8-byte read on the wire
      break;
  }
  const int side_index = side.client ? 0 : 1;
  if (side.first_post < 0) side.first_post = verbs.now().picoseconds();
  if (!verbs.post(endpoint_of(static_cast<std::uint32_t>(qp), side_index), wr)) ++side.errors;
}

bool Perftest::more(const Verbs& verbs, const Side& side, int qp) const {
  if (spec_.duration > SimTime::zero()) {
    return verbs.now().picoseconds() - side.first_post < spec_.duration.picoseconds();
  }
  const int done = is_latency() ? static_cast<int>(side.samples.size())
                                : side.posted[static_cast<std::size_t>(qp)];
  return done < spec_.iterations;
}

void Perftest::start_bandwidth(Verbs& verbs, Side& side) {
  side.ran = true;
  const int depth = spec_.duration > SimTime::zero() ? spec_.tx_depth
                                                     : std::min(spec_.tx_depth, spec_.iterations);
  for (int q = 0; q < spec_.qps; ++q) {
    for (int k = 0; k < depth; ++k) post(verbs, side, q);
  }
}

void Perftest::on_start(Verbs& verbs) {
  // The two NICs may be on one server: each side starts on its own.
  if (spec_.bidirectional && !is_latency() && verbs.server() == server_b_) {
    start_bandwidth(verbs, b_);
  }
  if (verbs.server() != server_a_) return;
  if (is_latency()) {
    a_.ran = true;
    a_.round_start = verbs.now().picoseconds();
    post(verbs, a_, 0);
    return;
  }
  start_bandwidth(verbs, a_);
}

void Perftest::on_cq(Verbs& verbs, std::uint32_t endpoint) {
  Side& side = (endpoint & 1u) == 0 ? a_ : b_;
  const auto qp = static_cast<int>(endpoint >> 1);
  std::array<Completion, 16> wc;
  std::size_t n;
  while ((n = verbs.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < n; ++i) {
      const Completion& c = wc[i];
      if (c.status != WcStatus::kSuccess) {
        ++side.errors;
        continue;
      }
      side.last_done = c.done.picoseconds();
      if (perftest_one_sided_latency(spec_.kind)) {
        // A read (or atomic) completes at the client when its response arrived: the whole
        // round trip is the sample, as perftest's read and atomic latencies.
        if (c.recv || !side.client) continue;
        side.samples.push_back(c.done.picoseconds() - side.round_start);
        ++side.messages;
        if (more(verbs, side, qp)) {
          side.round_start = c.done.picoseconds();
          post(verbs, side, qp);
        }
        continue;
      }
      if (is_latency()) {
        if (!c.recv) continue;
        if (side.client) {
          // The answer to this round: half the round trip is the one-way latency.
          side.samples.push_back((c.done.picoseconds() - side.round_start) / 2);
          ++side.messages;
          if (more(verbs, side, qp)) {
            side.round_start = c.done.picoseconds();
            post(verbs, side, qp);
          }
        } else {
          post(verbs, side, qp);  // the pong
        }
        continue;
      }
      if (c.recv) continue;
      side.samples.push_back(c.done.picoseconds() - c.posted.picoseconds());
      side.post_times.push_back(c.posted.picoseconds());
      side.done_times.push_back(c.done.picoseconds());
      ++side.messages;
      if (more(verbs, side, qp)) post(verbs, side, qp);
    }
  }
}

namespace {

// One side's tallies, on the rank of its server (the defaults elsewhere).
struct SideTally {
  std::int64_t messages = 0;
  std::int64_t first_post_ps = -1;
  std::int64_t last_done_ps = 0;
  std::int64_t errors = 0;
};
constexpr auto stat_table(std::type_identity<SideTally>) {
  using S = SideTally;
  return std::array{
      stat::sum("messages", "", &S::messages), stat::min("first_post_ps", "ps", &S::first_post_ps),
      stat::max("last_done_ps", "ps", &S::last_done_ps), stat::sum("errors", "", &S::errors)};
}

}  // namespace

PerftestResult Perftest::result(pdes::Sync& sync) const {
  // Only the rank of a side's server has its samples. First the tallies (a duration test's
  // message count is not known in advance), then the series: samples, and for bandwidth tests
  // the post and completion times, of the client and (bidirectional) the server.
  const bool both = spec_.bidirectional && !is_latency();
  const std::size_t blocks = is_latency() ? 1 : 3;
  const Side* sides[] = {&a_, &b_};
  const std::size_t nsides = both ? 2 : 1;
  std::vector<SideTally> tally(nsides);
  for (std::size_t i = 0; i < nsides; ++i) {
    const Side& sd = *sides[i];
    if (sd.ran) {
      tally[i] = {static_cast<std::int64_t>(sd.samples.size()), sd.first_post, sd.last_done,
                  sd.errors};
    }
  }
  stat::allreduce(sync, tally);
  PerftestResult r;
  std::vector<std::int64_t>* out[] = {&r.samples_ps, &r.posted_ps, &r.completed_ps};
  for (std::size_t i = 0; i < nsides; ++i) {
    const Side& sd = *sides[i];
    const auto cap = static_cast<std::size_t>(tally[i].messages);
    std::vector<std::int64_t> buf(blocks * cap, 0);
    const std::vector<std::int64_t>* series[] = {&sd.samples, &sd.post_times, &sd.done_times};
    for (std::size_t b = 0; sd.ran && b < blocks; ++b) {
      std::copy_n(series[b]->begin(), std::min(cap, series[b]->size()), buf.begin() + b * cap);
    }
    stat::gather_owned(sync, buf);
    for (std::size_t b = 0; b < blocks; ++b) {
      out[b]->insert(out[b]->end(), buf.begin() + b * cap, buf.begin() + (b + 1) * cap);
    }
    const SideTally& t = tally[i];
    r.first_post_ps = i == 0 ? t.first_post_ps : std::min(r.first_post_ps, t.first_post_ps);
    r.last_done_ps = std::max(r.last_done_ps, t.last_done_ps);
    r.messages += t.messages;
    r.errors += t.errors;
  }
  for (std::vector<std::int64_t>* v : out) std::sort(v->begin(), v->end());
  if (!is_latency() && spec_.duration > SimTime::zero() && !r.completed_ps.empty()) {
    // As perftest's duration mode: the messages completed within the duration, over it (what
    // was still in flight at its end completes, uncounted). A run stopped before the duration
    // ended counts over the time up to its last completion, not over the duration.
    const std::int64_t deadline = r.first_post_ps + spec_.duration.picoseconds();
    const auto within = static_cast<std::size_t>(
        std::upper_bound(r.completed_ps.begin(), r.completed_ps.end(), deadline) -
        r.completed_ps.begin());
    r.completed_ps.resize(within);
    r.posted_ps.resize(std::min(r.posted_ps.size(), within));
    r.messages = static_cast<std::int64_t>(within);
    r.last_done_ps = std::min(deadline, r.last_done_ps);
  }
  r.bytes = r.messages * spec_.bytes;
  return r;
}

double PerftestResult::peak_messages_per_s() const {
  const std::size_t n = std::min(posted_ps.size(), completed_ps.size());
  // perftest's search over every run i..j is quadratic: above 8192 messages, runs start and end
  // on every k-th message only (k = n / 8192 rounded up), which a steady stream hardly changes.
  const std::size_t k = n > 8192 ? (n + 8191) / 8192 : 1;
  double best = 0;
  for (std::size_t i = 0; i < n; i += k) {
    for (std::size_t j = i; j < n; j += k) {
      const std::int64_t t = completed_ps[j] - posted_ps[i];
      if (t > 0)
        best = std::max(best, static_cast<double>(j - i + 1) / (static_cast<double>(t) * 1e-12));
    }
  }
  return best;
}

double PerftestResult::percentile_us(double q) const {
  return static_cast<double>(nearest_rank(samples_ps, q)) * 1e-6;
}

double PerftestResult::average_us() const {
  if (samples_ps.empty()) return 0;
  double s = 0;
  for (std::int64_t x : samples_ps) s += static_cast<double>(x);
  return s / static_cast<double>(samples_ps.size()) * 1e-6;
}

double PerftestResult::gbps() const {
  const std::int64_t t = last_done_ps - first_post_ps;
  return t > 0 ? static_cast<double>(bytes) * 8.0 / (static_cast<double>(t) * 1e-12) / 1e9 : 0;
}

double PerftestResult::mpps() const {
  const std::int64_t t = last_done_ps - first_post_ps;
  return t > 0 ? static_cast<double>(messages) / (static_cast<double>(t) * 1e-12) / 1e6 : 0;
}

}  // namespace stepsim::nic
