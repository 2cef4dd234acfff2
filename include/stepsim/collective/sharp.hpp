#pragma once
/// SHARP-style in-network reduction (Mellanox/NVIDIA Scalable Hierarchical Aggregation and
/// Reduction Protocol, the engine behind NCCL's CollNet): aggregation trees over the switches,
/// and the switch-side agent that reduces the packets of a tree's children and sends one stream
/// up; the root's result comes back down by multicast.
///
/// A tree serves one rail: the NICs of GPU l of every server (so each GPU's NIC sends its shard
/// of the AllReduce once and receives the reduced shard once, instead of the ring's
/// 2(n-1)/n). Its root is the switch nearest to all the rail's leaves (spread over equal
/// choices); each switch on the way reaches its parent over one shortest-path port.
/// Flow control: a GPU has at most `coll.sharp.window` bytes in its tree that have not come
/// back reduced, so a switch needs at most that many packets' state per tree. AllGather
/// (kSharpGather): the switches forward each shard up unreduced and the root multicasts it,
/// paced at its child links' rate; each GPU has window / m^2 of its own packets in flight.
/// The reliability layer of real SHARP is not modelled: a lost in-network packet (FEC, buffer)
/// leaves the collective incomplete (the fabric counts the drop).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/core/stat_table.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/in_network.hpp"
#include "stepsim/pdes/sync.hpp"

namespace stepsim::collective {

/// SharpHeader::op: a contribution going up an aggregation tree (reduced on the way), or a
/// result coming down; kSharpGather: an AllGather's shard going up unreduced (every switch
/// forwards it to its parent, the root multicasts it down as kSharpDown).
enum SharpOp : std::uint32_t { kSharpUp = 0xf0, kSharpDown = 0xf1, kSharpGather = 0xf2 };

/// SHARP's view of fabric::Packet::transport (in-network packets): the tree (the GPU index in
/// the server, one tree per rail), the packet's index in the tree's stream, its direction.
struct SharpHeader {
  std::uint32_t tree = 0;
  std::uint32_t seq = 0;
  std::uint32_t op = kSharpUp;  ///< SharpOp
};

/// A switch of an aggregation tree: where its parent and children are (its port indices).
struct SharpTreeNode {
  topology::NodeId sw = 0;
  std::uint32_t parent_port = topology::kNone;  ///< kNone at the root
  std::vector<std::uint32_t> child_ports;       ///< toward member NICs or child switches
};

struct SharpTree {
  std::vector<topology::PortId> members;  ///< NIC ports, in communicator order
  std::vector<SharpTreeNode> nodes;       ///< the root first
};

/// One tree per GPU index in a server (rail). Errors: GPUs in fewer than two servers, servers
/// with different GPU counts, a switch that would hold more than `coll.sharp.trees` trees.
Result<std::vector<SharpTree>> plan_sharp(const topology::Topology& topo, const Communicator& comm,
                                          const CollectiveParams& params);

/// What one switch's aggregation engine did (payload bytes), summed over its trees.
struct SharpSwitchStats {
  std::uint64_t up_in_bytes = 0;     ///< contributions from children
  std::uint64_t up_out_bytes = 0;    ///< reduced (AllGather: forwarded) stream to the parent
  std::uint64_t down_in_bytes = 0;   ///< results from the parent
  std::uint64_t down_out_bytes = 0;  ///< results multicast to the children
  std::uint64_t aggregations = 0;    ///< packets reduced (all children's contributions in)
  std::uint64_t trees = 0;           ///< trees through this switch
};

/// SharpSwitchStats's statistics (core/stat_table.hpp); the digest hashes all but `trees`.
constexpr auto stat_table(std::type_identity<SharpSwitchStats>) {
  using S = SharpSwitchStats;
  using stat::kDigest;
  return std::array{
      stat::sum("up_in_bytes", "B", &S::up_in_bytes, kDigest),
      stat::sum("up_out_bytes", "B", &S::up_out_bytes, kDigest),
      stat::sum("down_in_bytes", "B", &S::down_in_bytes, kDigest),
      stat::sum("down_out_bytes", "B", &S::down_out_bytes, kDigest),
      stat::sum("aggregations", "", &S::aggregations, kDigest),
      stat::sum("trees", "", &S::trees),
  };
}

class SharpAgent final : public fabric::InNetworkAgent {
 public:
  /// `topo`, `params` must outlive the agent; `window_packets` bounds a tree's packets in flight.
  SharpAgent(const topology::Topology& topo, std::vector<SharpTree> trees,
             const CollectiveParams& params, std::uint32_t window_packets);

  void setup(fabric::FabricModel& fabric, std::span<const pdes::LpId> local_lps) override;
  void on_packet(pdes::LpContext& ctx, std::uint32_t in_port, const fabric::Packet& pkt) override;
  [[nodiscard]] std::uint64_t digest(pdes::LpId node) const override;

  [[nodiscard]] const std::vector<SharpTree>& trees() const { return trees_; }
  /// Every switch's counters, by node id (collective over `sync`).
  [[nodiscard]] std::vector<SharpSwitchStats> collect(pdes::Sync& sync) const;

 private:
  // A tree at one switch, with the reduction state of its packets in flight.
  struct Entry {
    std::uint32_t tree = 0;
    const SharpTreeNode* node = nullptr;
    std::vector<std::uint32_t> seq;    // by slot: packet being reduced there
    std::vector<std::uint16_t> count;  // by slot: children in so far
    // AllGather at the root: its multicast, paced at the slowest child link's rate.
    SimTime down_free;
    DataRate down_rate = DataRate::bps(1);
  };

  const topology::Topology& topo_;
  std::vector<SharpTree> trees_;
  const CollectiveParams& p_;
  std::uint32_t window_;
  fabric::FabricModel* fabric_ = nullptr;
  std::vector<std::vector<Entry>> entries_;  // by node id (local switches)
  std::vector<SimTime> alu_free_;            // by node id
  std::vector<DataRate> alu_rate_;           // by node id
  std::vector<SharpSwitchStats> stats_;      // by node id
};

/// The agent a SHARP collective of `comm` runs with on `fabric`: sets `params.sharp_payload` to
/// the fabric's frame payload (the MTU or the cell) and plans the trees. Errors: a window below
/// one frame, and plan_sharp's. `topo` and `params` must outlive the agent.
Result<std::unique_ptr<SharpAgent>> make_sharp_agent(const topology::Topology& topo,
                                                     const Communicator& comm,
                                                     CollectiveParams& params,
                                                     const fabric::FabricParams& fabric);

}  // namespace stepsim::collective
