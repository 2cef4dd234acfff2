#pragma once
// What the comm models share (private to the workload layer): the key of a distinct collective,
// free collectives, memoization by (kind, size, GPUs), and the listing model that collects a
// step's distinct collectives for the bulk models.

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/workload/comm_model.hpp"

namespace stepsim::workload {

/// A distinct collective of a step: what the comm models memoize and the step counts.
using CollectiveKey = std::tuple<int, std::int64_t, std::vector<std::uint32_t>>;
CollectiveKey key_of(const CommOp& op);
/// Nothing to move, or nobody to move it to: free.
bool is_free(const CommOp& op);
/// What the NICs and the fabric saw in a packet or cell run: counters, the ports that did
/// anything, the connections (`conns`, of the run) and their queue pairs (moved out of `rdma`).
void fill_fabric(CommCost& c, nic::RdmaRun& rdma, std::vector<nic::Connection>&& conns);

/// The last few distinct collectives looked up and what they map to, compared in place (no key
/// is copied): a step asks for the same few collectives over and over, and a map lookup by a
/// copied GPU list cost most of an analytical step.
template <typename V, std::size_t N = 8>
class RecentCollectives {
 public:
  [[nodiscard]] const V* find(const CommOp& op) const {
    for (const Entry& e : e_) {
      if (e.used && e.kind == op.kind && e.bytes == op.bytes && e.gpus == op.gpus) return &e.value;
    }
    return nullptr;
  }
  void put(const CommOp& op, const V& v) {
    Entry& e = e_[next_];
    next_ = (next_ + 1) % N;
    e.used = true;
    e.kind = op.kind;
    e.bytes = op.bytes;
    e.gpus.assign(op.gpus.begin(), op.gpus.end());
    e.value = v;
  }

 private:
  struct Entry {
    bool used = false;
    collective::Kind kind{};
    std::int64_t bytes = 0;
    std::vector<std::uint32_t> gpus;
    V value{};
  };
  std::array<Entry, N> e_{};
  std::size_t next_ = 0;
};

/// Free collectives, the communicator, and memoization by (kind, size, GPUs): a step repeats
/// few distinct collectives. Subclasses cost one collective on its communicator.
class MemoizedComm : public CommModel {
 public:
  MemoizedComm(const topology::Topology& topo, const Scenario& s) : topo_(topo), s_(s) {}
  Result<CommCost> cost(const CommOp& op) override;
  [[nodiscard]] bool repeats_free() const override { return true; }

 protected:
  virtual Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) = 0;
  /// A cost of `seconds` with its bus bandwidth (nccl-tests' busbw).
  static CommCost with_busbw(const CommOp& op, double seconds);
  const topology::Topology& topo_;
  const Scenario& s_;
  std::map<CollectiveKey, CommCost> memo_;
  RecentCollectives<const CommCost*> recent_;  // entries of memo_ (a map's nodes stay put)
};

/// Lists the distinct collectives of a step (run_step's first pass for bulk models); each costs
/// nothing.
class ListingComm final : public CommModel {
 public:
  Result<CommCost> cost(const CommOp& op) override;
  [[nodiscard]] std::string name() const override { return "listing"; }
  [[nodiscard]] bool repeats_free() const override { return true; }
  std::vector<CommOp> ops;

 private:
  std::set<CollectiveKey> seen_;
  RecentCollectives<bool> recent_;  // the last few of seen_
};

}  // namespace stepsim::workload
