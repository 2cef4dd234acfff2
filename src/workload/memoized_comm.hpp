#pragma once
// What the comm models share (private to the workload layer): the key of a distinct collective,
// free collectives, memoization by (kind, size, GPUs), and the listing model that collects a
// step's distinct collectives for the bulk models.

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

/// Free collectives, the communicator, and memoization by (kind, size, GPUs): a step repeats
/// few distinct collectives. Subclasses cost one collective on its communicator.
class MemoizedComm : public CommModel {
 public:
  MemoizedComm(const topology::Topology& topo, const Scenario& s) : topo_(topo), s_(s) {}
  Result<CommCost> cost(const CommOp& op) override;

 protected:
  virtual Result<CommCost> compute(const CommOp& op, const collective::Communicator& comm) = 0;
  /// A cost of `seconds` with its bus bandwidth (nccl-tests' busbw).
  static CommCost with_busbw(const CommOp& op, double seconds);
  const topology::Topology& topo_;
  const Scenario& s_;
  std::map<CollectiveKey, CommCost> memo_;
};

/// Lists the distinct collectives of a step (run_step's first pass for bulk models); each costs
/// nothing.
class ListingComm final : public CommModel {
 public:
  Result<CommCost> cost(const CommOp& op) override;
  [[nodiscard]] std::string name() const override { return "listing"; }
  std::vector<CommOp> ops;

 private:
  std::set<CollectiveKey> seen_;
};

}  // namespace stepsim::workload
