// The step's /flows rows at packet and cell fidelity (memoized mode) against what the packet runs
// put on the network: each collective's rows add up to the bytes its GPUs posted to their NICs,
// every row's times are ordered and lie inside its collective's run and the step, and the GPUs
// are those whose NICs the rows name.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/step.hpp"

namespace stepsim::workload {
namespace {

// Passes costs through and keeps, by call (the step records its collectives in that order), the
// bytes each collective's packet run posted to the NICs.
class RecordingComm final : public CommModel {
 public:
  explicit RecordingComm(std::unique_ptr<CommModel> inner) : inner_(std::move(inner)) {}
  Result<CommCost> cost(const CommOp& op) override {
    auto c = inner_->cost(op);
    if (c) {
      network_bytes.push_back(c->network_bytes);
      run_ps.push_back(c->engine.simulated_ps);
    }
    return c;
  }
  [[nodiscard]] std::string name() const override { return inner_->name(); }
  std::vector<std::uint64_t> network_bytes;  ///< by collective record
  std::vector<std::int64_t> run_ps;          ///< by collective record: its packet run's length

 private:
  std::unique_ptr<CommModel> inner_;
};

void check_rows(const Scenario& s) {
  const auto topo = topology::load_topology(s.topology).value();
  pdes::SerialSync sync;
  RecordingComm comm(make_packet_comm(topo, s, sync, pdes::EngineOptions{}));
  const StepResult r = run_step(s, topo, comm).value();
  ASSERT_TRUE(r.complete);
  ASSERT_FALSE(r.flows.empty());
  ASSERT_EQ(comm.network_bytes.size(), r.colls.size());
  EXPECT_EQ(r.flow_rows_total, r.flows.size());  // a small step keeps every row
  const std::vector<std::uint32_t> gpu_of = collective::gpu_of_nic_ports(topo);
  // The step's timeline: its last stage, or the end of its last collective's packet run (a
  // ZeRO parameter gather may outlast the step, hidden behind the next one's first forward
  // pass; a sender's last completion comes after the receivers are done).
  const auto ps = [](double seconds) {
    return static_cast<std::int64_t>(std::llround(seconds * 1e12));
  };
  std::int64_t timeline = ps(r.step_s);
  for (std::uint32_t id = 0; id < r.colls.size(); ++id) {
    timeline = std::max(timeline, ps(r.colls[id].start_s) + comm.run_ps[id]);
  }
  std::map<std::uint32_t, std::uint64_t> bytes;  // by collective: its rows' bytes
  for (const FlowRow& f : r.flows) {
    ASSERT_LT(f.collective, r.colls.size());
    const CollectiveRecord& c = r.colls[f.collective];
    EXPECT_GE(f.start_ps, ps(c.start_s)) << f.collective;
    EXPECT_LE(f.start_ps, f.first_byte_ps) << f.collective;
    EXPECT_LE(f.first_byte_ps, f.end_ps) << f.collective;
    EXPECT_LE(f.end_ps, ps(c.start_s) + comm.run_ps[f.collective]) << f.collective;  // in its run
    EXPECT_LE(f.end_ps, timeline) << f.collective;
    EXPECT_EQ(f.group, c.group);
    EXPECT_EQ(f.kind, c.kind);
    EXPECT_EQ(f.src_gpu, gpu_of[f.src_nic]);
    EXPECT_EQ(f.dst_gpu, gpu_of[f.dst_nic]);
    EXPECT_NE(f.src_nic, f.dst_nic);
    EXPECT_GE(f.repeats, 1u);
    EXPECT_GE(f.messages, 1u);
    // At least one MTU packet per 4 KiB of payload (more with retransmissions).
    EXPECT_GE(f.packets * static_cast<std::uint64_t>(s.fabric.mtu.count()), f.bytes);
    bytes[f.collective] += f.bytes;
  }
  // Each collective that ran first has rows adding up to what it posted (with its TP copies).
  std::uint64_t total = 0;
  for (std::uint32_t id = 0; id < r.colls.size(); ++id) {
    const auto it = bytes.find(id);
    if (it == bytes.end()) continue;
    EXPECT_EQ(it->second, comm.network_bytes[id]) << "collective " << id;
    total += it->second;
  }
  EXPECT_GT(total, 0u);
}

Scenario tiny(const std::vector<std::string>& sets) {
  auto s = load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml", sets);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

TEST(FlowRows, PipelineSendsAtPacketLevel) {
  check_rows(tiny({}));
}

// DP 4 over the two servers: rings with NVLink and network hops, run with their TP copies.
TEST(FlowRows, DataParallelRingsWithTheirCopiesAtPacketAndCellLevel) {
  check_rows(tiny({"parallel.pp=1", "parallel.dp=4"}));
  check_rows(tiny({"parallel.pp=1", "parallel.dp=4", "fidelity=cell"}));
}

TEST(FlowRows, ZeroThreeWithDcqcnInCells) {
  check_rows(tiny({"fidelity=cell", "parallel.pp=1", "parallel.dp=4", "parallel.zero=3",
                   "cc.algorithm=dcqcn"}));
}

}  // namespace
}  // namespace stepsim::workload
