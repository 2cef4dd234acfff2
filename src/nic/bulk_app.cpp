#include "stepsim/nic/bulk_app.hpp"

#include <algorithm>
#include <array>

#include "stepsim/core/fatal.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::nic {

double BulkResult::gbps(std::size_t t, std::size_t k0, std::size_t k1, SimTime every) const {
  if (k1 <= k0 || k1 >= samples.size()) return 0;
  const double moved = static_cast<double>(samples[k1][t] - samples[k0][t]);
  return moved * 8.0 / (static_cast<double>(k1 - k0) * every.seconds()) / 1e9;
}

double jain_index(const std::vector<double>& x) {
  double s = 0;
  double s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  return s2 > 0 ? s * s / (static_cast<double>(x.size()) * s2) : 1.0;
}

BulkApp::BulkApp(std::vector<Transfer> transfers, const std::vector<Connection>& connections,
                 const topology::Topology& topo, SimTime sample_every, int max_samples)
    : transfers_(std::move(transfers)), every_(sample_every), max_samples_(max_samples) {
  transfer_of_endpoint_.assign(connections.size() * 2, topology::kNone);
  for (std::uint32_t t = 0; t < transfers_.size(); ++t) {
    const Transfer& x = transfers_[t];
    STEPSIM_CHECK(x.connection < connections.size(), "a transfer names a missing connection");
    STEPSIM_CHECK(transfer_of_endpoint_[endpoint_of(x.connection, 0)] == topology::kNone,
                  "two transfers on one connection");
    transfer_of_endpoint_[endpoint_of(x.connection, 0)] = t;
    server_of_.push_back(topo.ports[connections[x.connection].a].node);
  }
  state_.resize(transfers_.size());
}

void BulkApp::on_start(Verbs& verbs) {
  bool any = false;
  for (std::uint32_t t = 0; t < transfers_.size(); ++t) {
    if (server_of_[t] != verbs.server()) continue;
    any = true;
    verbs.schedule(transfers_[t].start, t);
  }
  if (any && every_ > SimTime::zero()) verbs.schedule(every_, kSampleTag);
}

void BulkApp::post(Verbs& verbs, std::uint32_t t) {
  const Transfer& x = transfers_[t];
  State& s = state_[t];
  WorkRequest wr;
  wr.opcode = x.opcode;
  wr.bytes = x.message_bytes;
  wr.wr_id = static_cast<std::uint64_t>(s.posted++);
  if (!verbs.post(endpoint_of(x.connection, 0), wr)) ++s.errors;
}

void BulkApp::on_timer(Verbs& verbs, const AppTimer& timer) {
  const std::uint32_t tag = timer.tag;
  if (tag != kSampleTag) {
    const Transfer& x = transfers_[tag];
    for (int k = 0; k < std::min(x.depth, x.messages); ++k) post(verbs, tag);
    return;
  }
  bool active = false;
  std::size_t taken = 0;
  for (std::uint32_t t = 0; t < transfers_.size(); ++t) {
    if (server_of_[t] != verbs.server()) continue;
    State& s = state_[t];
    s.samples.push_back(s.bytes);
    taken = s.samples.size();
    active = active || (s.done < transfers_[t].messages && s.errors == 0);
  }
  if (active && static_cast<int>(taken) < max_samples_) verbs.schedule(every_, kSampleTag);
}

void BulkApp::on_cq(Verbs& verbs, std::uint32_t endpoint) {
  std::array<Completion, 16> wc;
  std::size_t n;
  while ((n = verbs.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < n; ++i) {
      const Completion& c = wc[i];
      if (c.recv) continue;
      const std::uint32_t t = transfer_of_endpoint_[endpoint];
      if (t == topology::kNone) continue;
      State& s = state_[t];
      if (c.status != WcStatus::kSuccess) {
        ++s.errors;
        continue;
      }
      ++s.done;
      s.bytes += c.bytes;
      s.last_ps = c.done.picoseconds();
      if (s.posted < transfers_[t].messages) post(verbs, t);
    }
  }
}

namespace {

// One transfer's tallies, on the rank of its server (the defaults elsewhere).
struct TransferTally {
  std::int64_t last_ps = -1;
  std::int64_t bytes = 0;
  std::int64_t errors = 0;
  std::int64_t samples = 0;
};
constexpr auto stat_table(std::type_identity<TransferTally>) {
  using S = TransferTally;
  return std::array{stat::max("last_ps", "ps", &S::last_ps), stat::sum("bytes", "B", &S::bytes),
                    stat::sum("errors", "", &S::errors), stat::sum("samples", "", &S::samples)};
}

}  // namespace

BulkResult BulkApp::result(pdes::Sync& sync) const {
  // Each transfer's record lives on one rank. Sample rows are padded to the longest series.
  const std::size_t nt = transfers_.size();
  std::vector<TransferTally> tally(nt);
  for (std::size_t t = 0; t < nt; ++t) {
    const State& s = state_[t];
    if (s.posted == 0 && s.samples.empty()) continue;  // not this rank's
    tally[t] = {s.last_ps, s.bytes, s.errors, static_cast<std::int64_t>(s.samples.size())};
  }
  stat::allreduce(sync, tally);
  std::size_t k_max = 0;
  for (const TransferTally& x : tally) k_max = std::max(k_max, static_cast<std::size_t>(x.samples));
  BulkResult r;
  r.samples.assign(k_max, std::vector<std::int64_t>(nt, 0));
  std::vector<std::int64_t> buf(k_max * nt, 0);
  for (std::size_t t = 0; t < nt; ++t) {
    const State& s = state_[t];
    if (s.posted == 0 && s.samples.empty()) continue;
    for (std::size_t k = 0; k < k_max; ++k) {
      buf[k * nt + t] = k < s.samples.size() ? s.samples[k] : s.bytes;
    }
  }
  stat::gather_owned(sync, buf);
  for (std::size_t t = 0; t < nt; ++t) {
    const TransferTally& x = tally[t];
    const bool complete = x.bytes == transfers_[t].message_bytes * transfers_[t].messages;
    r.done_ps.push_back(complete ? x.last_ps : -1);
    r.bytes.push_back(x.bytes);
    r.errors.push_back(x.errors);
    for (std::size_t k = 0; k < k_max; ++k) r.samples[k][t] = buf[k * nt + t];
  }
  return r;
}

}  // namespace stepsim::nic
