#include "stepsim/nic/perftest.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "stepsim/core/percentile.hpp"

namespace stepsim::nic {

Result<PerftestKind> parse_perftest_kind(const std::string& name) {
  if (name == "write_lat") return PerftestKind::kWriteLat;
  if (name == "write_bw") return PerftestKind::kWriteBw;
  if (name == "send_lat") return PerftestKind::kSendLat;
  if (name == "read_bw") return PerftestKind::kReadBw;
  return Error{"unknown perftest '" + name + "' (allowed: write_lat, write_bw, send_lat, read_bw)"};
}

std::string perftest_kind_name(PerftestKind k) {
  switch (k) {
    case PerftestKind::kWriteLat:
      return "write_lat";
    case PerftestKind::kWriteBw:
      return "write_bw";
    case PerftestKind::kSendLat:
      return "send_lat";
    case PerftestKind::kReadBw:
      return "read_bw";
  }
  return "?";
}

Perftest::Perftest(PerftestSpec spec, const topology::Topology& topo) : spec_(spec) {
  server_a_ = spec_.a < topo.ports.size() ? topo.ports[spec_.a].node : 0;
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
    case PerftestKind::kReadBw:
      wr.opcode = Opcode::kRead;
      break;
  }
  const int side_index = side.client ? 0 : 1;
  if (side.first_post < 0) side.first_post = verbs.now().picoseconds();
  if (!verbs.post(endpoint_of(static_cast<std::uint32_t>(qp), side_index), wr)) ++side.errors;
}

void Perftest::on_start(Verbs& verbs) {
  if (verbs.server() != server_a_) return;
  a_.ran = true;
  if (is_latency()) {
    a_.round_start = verbs.now().picoseconds();
    post(verbs, a_, 0);
    return;
  }
  for (int q = 0; q < spec_.qps; ++q) {
    for (int k = 0; k < std::min(spec_.tx_depth, spec_.iterations); ++k) post(verbs, a_, q);
  }
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
      if (is_latency()) {
        if (!c.recv) continue;
        if (side.client) {
          // The answer to this round: half the round trip is the one-way latency.
          side.samples.push_back((c.done.picoseconds() - side.round_start) / 2);
          ++side.messages;
          if (static_cast<int>(side.samples.size()) < spec_.iterations) {
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
      ++side.messages;
      if (side.posted[static_cast<std::size_t>(qp)] < spec_.iterations) post(verbs, side, qp);
    }
  }
}

PerftestResult Perftest::result(pdes::Sync& sync) const {
  // Only the client's rank has samples; a sum over ranks gathers them.
  const std::size_t cap = static_cast<std::size_t>(spec_.iterations) *
                          static_cast<std::size_t>(is_latency() ? 1 : spec_.qps);
  std::vector<std::uint64_t> buf(cap + 4, 0);
  if (a_.ran) {
    for (std::size_t i = 0; i < a_.samples.size() && i < cap; ++i) {
      buf[i] = static_cast<std::uint64_t>(a_.samples[i]) + 1;
    }
    buf[cap] = static_cast<std::uint64_t>(a_.first_post);
    buf[cap + 1] = static_cast<std::uint64_t>(a_.last_done);
    buf[cap + 2] = static_cast<std::uint64_t>(a_.messages);
    buf[cap + 3] = static_cast<std::uint64_t>(a_.errors);
  }
  sync.allreduce_sum(buf);
  PerftestResult r;
  for (std::size_t i = 0; i < cap; ++i) {
    if (buf[i] != 0) r.samples_ps.push_back(static_cast<std::int64_t>(buf[i]) - 1);
  }
  std::sort(r.samples_ps.begin(), r.samples_ps.end());
  r.first_post_ps = static_cast<std::int64_t>(buf[cap]);
  r.last_done_ps = static_cast<std::int64_t>(buf[cap + 1]);
  r.messages = static_cast<std::int64_t>(buf[cap + 2]);
  r.errors = static_cast<std::int64_t>(buf[cap + 3]);
  r.bytes = r.messages * spec_.bytes;
  return r;
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
