#include "stepsim/collective/collective.hpp"

#include <algorithm>

#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/collective/nic_share.hpp"
#include "stepsim/topology/nic_map.hpp"

namespace stepsim::collective {

Result<Kind> parse_kind(const std::string& name) {
  // Every kind but kSend (a pipeline send is the step's, no collective's name).
  constexpr Kind kNamed[] = {Kind::kAllReduce, Kind::kReduceScatter, Kind::kAllGather,
                             Kind::kBroadcast, Kind::kReduce,        Kind::kAllToAll,
                             Kind::kAllToAllv, Kind::kSendRecv,      Kind::kEpDispatch,
                             Kind::kEpCombine, Kind::kEpDispatchLl,  Kind::kEpCombineLl};
  std::string allowed;
  for (const Kind k : kNamed) {
    if (kind_name(k) == name) return k;
    allowed += (allowed.empty() ? "" : ", ") + kind_name(k);
  }
  return Error{"unknown collective '" + name + "' (allowed: " + allowed + ")"};
}

std::string kind_name(Kind k) {
  switch (k) {
    case Kind::kAllReduce:
      return "allreduce";
    case Kind::kReduceScatter:
      return "reducescatter";
    case Kind::kAllGather:
      return "allgather";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kReduce:
      return "reduce";
    case Kind::kAllToAll:
      return "alltoall";
    case Kind::kAllToAllv:
      return "alltoallv";
    case Kind::kSendRecv:
      return "sendrecv";
    case Kind::kSend:
      return "send";
    case Kind::kEpDispatch:
      return "ep_dispatch";
    case Kind::kEpCombine:
      return "ep_combine";
    case Kind::kEpDispatchLl:
      return "ep_dispatch_ll";
    case Kind::kEpCombineLl:
      return "ep_combine_ll";
  }
  return "?";
}

std::int64_t p2p_bytes(Kind kind, std::int64_t bytes, int n, int src, int dst) {
  if (kind == Kind::kSendRecv) return dst == (src + 1) % n ? bytes : 0;
  if (kind == Kind::kSend) return src == 0 && dst == 1 ? bytes : 0;
  return bytes / n;
}

double busbw_factor(Kind k, int n) {
  const double dn = n;
  switch (k) {
    case Kind::kAllReduce:
      return 2.0 * (dn - 1) / dn;
    case Kind::kReduceScatter:
    case Kind::kAllGather:
    case Kind::kAllToAll:
    case Kind::kAllToAllv:
      return (dn - 1) / dn;
    case Kind::kBroadcast:
    case Kind::kReduce:
    case Kind::kSendRecv:
    case Kind::kSend:
    case Kind::kEpDispatch:
    case Kind::kEpCombine:
    case Kind::kEpDispatchLl:
    case Kind::kEpCombineLl:
      return 1.0;
  }
  return 1.0;
}

Result<Protocol> parse_protocol(const std::string& name) {
  if (name == "simple") return Protocol::kSimple;
  if (name == "ll") return Protocol::kLl;
  if (name == "ll128") return Protocol::kLl128;
  return Error{"unknown protocol '" + name + "' (allowed: simple, ll, ll128)"};
}

std::string protocol_name(Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return "simple";
    case Protocol::kLl:
      return "ll";
    case Protocol::kLl128:
      return "ll128";
  }
  return "?";
}

namespace {

// The coll.algorithm values: the registry's, and "auto".
std::vector<std::string> algorithm_values() {
  std::vector<std::string> names = selectable_algorithms();
  names.emplace_back("auto");
  return names;
}

// The coll.protocol values: every Protocol, and "auto".
std::vector<std::string> protocol_values() {
  std::vector<std::string> names;
  for (const Protocol p : {Protocol::kSimple, Protocol::kLl, Protocol::kLl128}) {
    names.push_back(protocol_name(p));
  }
  names.emplace_back("auto");
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Param `q`, bound to `field`, that also takes `auto` (CollectiveParams::kP2pAuto).
template <class T>
config::Param with_auto(const config::Param& q, T& field) {
  config::Param a = q;
  a.set = [set = q.set, &field](const std::string& text) -> Result<bool> {
    if (text == "auto") {
      field = CollectiveParams::kP2pAuto;
      return true;
    }
    auto r = set(text);
    if (!r) return Error{r.error().message + ", or auto"};
    return r;
  };
  a.get = [get = q.get, &field] {
    return field == CollectiveParams::kP2pAuto ? std::string("auto") : get();
  };
  return a;
}

}  // namespace

Result<bool> CollectiveParams::validate() const {
  const std::vector<std::string> algorithms = algorithm_values();
  if (std::find(algorithms.begin(), algorithms.end(), algorithm) == algorithms.end()) {
    return Error{"coll.algorithm: '" + algorithm +
                 "' is not available (allowed: " + joined(algorithms) + ")"};
  }
  if (protocol != "auto") {
    if (auto p = parse_protocol(protocol); !p) return Error{"coll.protocol: " + p.error().message};
  }
  if (channels < 1 || channels > 64) return Error{"coll.channels must be 1..64"};
  if (chunk < 64) return Error{"coll.chunk must be >= 64 bytes"};
  if (slots < 1 || slots > 1024) return Error{"coll.slots must be 1..1024"};
  if (nvlink.bits_per_second() <= 0) return Error{"gpu.nvlink must be > 0"};
  if (!(nvlink_efficiency > 0 && nvlink_efficiency <= 1)) {
    return Error{"gpu.nvlink_efficiency must be in (0, 1]"};
  }
  if (!(nvls_efficiency >= 0 && nvls_efficiency <= 1)) {
    return Error{"gpu.nvls_efficiency must be in [0, 1]"};
  }
  if (reduce_rate.bits_per_second() <= 0) return Error{"gpu.reduce_rate must be > 0"};
  if (sharp_trees < 1) return Error{"coll.sharp.trees must be >= 1"};
  if (sharp_window < sharp_payload) return Error{"coll.sharp.window must be >= one packet"};
  return true;
}

double CollectiveParams::wire_factor() const {
  switch (parse_protocol(protocol).value()) {
    case Protocol::kLl:
      return 2.0;  // an 8-byte flag with every 8 bytes of data
    case Protocol::kLl128:
      return 128.0 / 120.0;
    case Protocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

DataRate CollectiveParams::nvlink_payload() const {
  return DataRate::bps(
      static_cast<std::int64_t>(static_cast<double>(nvlink.bits_per_second()) * nvlink_efficiency));
}

void CollectiveParams::apply_gpu(const gpu::GpuSpec& g) {
  gpu = g.name;
  nvlink = g.nvlink;
  nvlink_efficiency = g.nvlink_efficiency;
  nvls_efficiency = g.nvls_efficiency;
}

SimTime CollectiveParams::hop_overhead(bool over_nvlink) const {
  switch (parse_protocol(protocol).value()) {
    case Protocol::kLl:
      return over_nvlink ? nvlink_overhead_ll : net_overhead_ll;
    case Protocol::kLl128:
      return over_nvlink ? nvlink_overhead_ll128 : net_overhead_ll128;
    case Protocol::kSimple:
      return over_nvlink ? nvlink_overhead_simple : net_overhead_simple;
  }
  return SimTime::zero();
}

SimTime CollectiveParams::base_latency() const {
  switch (parse_protocol(protocol).value()) {
    case Protocol::kLl:
      return base_ll;
    case Protocol::kLl128:
      return base_ll128;
    case Protocol::kSimple:
      return base_simple;
  }
  return SimTime::zero();
}

config::ParamTable collective_param_table(CollectiveParams& p) {
  config::ParamTable t;
  const SimTime max_time = SimTime::s(1);
  t.choice("coll.algorithm", p.algorithm, algorithm_values(),
           selectable_algorithms_help() +
               ", or auto (the tuner; NVLS with NVLS GPUs, SHARP with coll.sharp.enable 1); "
               "`stepsim list algorithms` describes each");
  const std::vector<std::string> protocols = protocol_values();
  t.choice("coll.protocol", p.protocol, protocols,
           "NCCL protocol: " + joined({protocols.begin(), protocols.end() - 1}) +
               ", or auto (the tuner)");
  t.integer("coll.channels", p.channels, 1, 64, "parallel rings (channel c on rail c mod NICs)");
  t.bytes("coll.chunk", p.chunk, 64, std::int64_t{1} << 30, "bytes per pipelined piece");
  t.integer("coll.slots", p.slots, 1, 1024, "pieces in flight per ring edge");
  t.bytes("coll.p2p.net_chunk", p.p2p_net_chunk, 64, std::int64_t{1} << 30,
          "point to point: bytes per network message (NCCL_P2P_NET_CHUNKSIZE)");
  {
    config::ParamTable inner;  // the explicit values' parsing and range, then `auto` beside them
    inner.bytes("coll.p2p.nvl_chunk", p.p2p_nvl_chunk, 64, std::int64_t{1} << 30,
                "point to point: bytes per NVLink piece (NCCL_P2P_NVL_CHUNKSIZE), or auto "
                "(NCCL's: 512 KiB in one server, coll.p2p.net_chunk when the communicator spans "
                "servers)");
    inner.integer("coll.p2p.channels_per_peer", p.p2p_channels_per_peer, 1, 64,
                  "point to point: channels per peer, each with coll.slots pieces in flight "
                  "(NCCL_NCHANNELS_PER_NET_PEER), or auto (NCCL 2.29+'s: across servers "
                  "ceil(NIC GB/s / 14) rounded up to a power of 2, halved while it times "
                  "ceil(ranks / 8) exceeds 16; 32 in one server; DeepEP: 2)");
    t.add(with_auto(inner.params()[0], p.p2p_nvl_chunk));
    t.add(with_auto(inner.params()[1], p.p2p_channels_per_peer));
  }
  t.time("coll.p2p.proxy_overhead", p.p2p_proxy_overhead, SimTime::zero(), max_time,
         "point to point: a network message's latency through the proxy, at the sender's NIC and "
         "at the receiver (NCCL's network overhead per step, tuning.cc); messages in flight "
         "overlap it");
  t.time("coll.p2p.proxy_busy", p.p2p_proxy_busy, SimTime::zero(), max_time,
         "point to point: the part of coll.p2p.proxy_overhead the proxy thread is busy, one "
         "message after the other (posting or polling it); a GPU's proxy serves its sends and "
         "receives in turn");
  t.add({"gpu.model",
         "a shipped GPU (" + gpu::gpu_preset_list() +
             "): sets gpu.nvlink and the efficiencies; keys given after it override",
         [&p](const std::string& name) -> Result<bool> {
           auto g = gpu::gpu_preset(name);
           if (!g) return g.error();
           p.apply_gpu(*g);
           return true;
         },
         [&p] { return p.gpu; }});
  t.rate("gpu.nvlink", p.nvlink, "NVLink bandwidth per GPU per direction");
  t.real("gpu.nvlink_efficiency", p.nvlink_efficiency, 0.01, 1.0,
         "fraction of gpu.nvlink that collective copies carry as payload");
  t.real("gpu.nvls_efficiency", p.nvls_efficiency, 0.0, 1.0,
         "NVLink SHARP (NVLS) traffic's rate relative to copies (0: the GPU has no NVLS)");
  t.time("gpu.nvlink_latency", p.nvlink_latency, SimTime::zero(), max_time,
         "NVLink transfer latency");
  t.rate("gpu.reduce_rate", p.reduce_rate, "reduction throughput (HBM bound)");
  t.time("coll.base.simple", p.base_simple, SimTime::zero(), max_time,
         "base latency, Simple (NCCL tuning.cc)");
  t.time("coll.base.ll", p.base_ll, SimTime::zero(), max_time, "base latency, LL");
  t.time("coll.base.ll128", p.base_ll128, SimTime::zero(), max_time, "base latency, LL128");
  t.time("coll.overhead.nvlink_simple", p.nvlink_overhead_simple, SimTime::zero(), max_time,
         "per-hop overhead above the transport, Simple over NVLink");
  t.time("coll.overhead.net_simple", p.net_overhead_simple, SimTime::zero(), max_time,
         "per-hop overhead above the transport, Simple over the network");
  t.time("coll.overhead.nvlink_ll", p.nvlink_overhead_ll, SimTime::zero(), max_time,
         "per-hop overhead, LL over NVLink");
  t.time("coll.overhead.net_ll", p.net_overhead_ll, SimTime::zero(), max_time,
         "per-hop overhead, LL over the network");
  t.time("coll.overhead.nvlink_ll128", p.nvlink_overhead_ll128, SimTime::zero(), max_time,
         "per-hop overhead, LL128 over NVLink");
  t.time("coll.overhead.net_ll128", p.net_overhead_ll128, SimTime::zero(), max_time,
         "per-hop overhead, LL128 over the network");
  t.time("coll.overhead.nvls", p.nvls_overhead, SimTime::zero(), max_time,
         "NVLS-tree: overhead of the NVLS round inside a server (reduce + multicast)");
  t.time("coll.overhead.nvls_tree_net", p.nvls_tree_net_overhead, SimTime::zero(), max_time,
         "NVLS-tree: per-hop overhead above the transport over the network");
  t.bytes("coll.nvls.chunk", p.nvls_chunk, 64, std::int64_t{1} << 30,
          "NVLS-tree: bytes per pipelined piece (NCCL_NVLS_CHUNKSIZE; 64 KiB at most from 4 "
          "servers)");
  t.rate("coll.sharp.alu", p.sharp_alu,
         "SHARP: a switch's reduction throughput (bytes in); 0 = the sum of its port rates");
  t.time("coll.sharp.latency", p.sharp_latency, SimTime::zero(), max_time,
         "SHARP: a switch's aggregation latency per packet");
  t.integer("coll.sharp.trees", p.sharp_trees, 1, 65535,
            "SHARP: aggregation trees a switch can hold at once");
  t.integer("coll.sharp.enable", p.sharp_enable, 0, 1,
            "SHARP: 1 = the fabric aggregates, so --algo auto may choose sharp and nvls_sharp "
            "(NCCL_COLLNET_ENABLE)");
  t.bytes("coll.sharp.window", p.sharp_window, 64, std::int64_t{1} << 32,
          "SHARP: bytes a GPU may have in its tree before results come back");
  t.integer("coll.ep.experts", p.ep_experts, 0, 1 << 20,
            "expert parallelism (ep_* collectives): routed experts over the GPUs (0: one each)");
  t.integer("coll.ep.top_k", p.ep_top_k, 1, 1 << 10, "expert parallelism: experts per token");
  t.integer("coll.ep.max_nodes", p.ep_max_nodes, 0, 1 << 16,
            "expert parallelism: servers a token may reach (node-limited routing; 0: any)");
  t.time("coll.ep.ll_overhead", p.ep_ll_overhead, SimTime::zero(), max_time,
         "expert parallelism, low-latency kernels: the kernel's time beside its transfers");
  t.real("coll.ep.rdma_efficiency", p.ep_rdma_efficiency, 0.05, 1.0,
         "expert parallelism: DeepEP's achieved fraction of the NIC's RDMA goodput");
  return t;
}

namespace {

// The topology's GPUs, server by server, up to `limit`; GPU g of a server uses NIC
// topology::nic_of_gpu(server, g) (consecutive GPUs share a NIC, as behind one PCIe switch).
std::vector<Gpu> gpus_of(const topology::Topology& topo, std::size_t limit) {
  std::vector<Gpu> all;
  for (topology::NodeId v = 0; v < topo.nodes.size() && all.size() < limit; ++v) {
    if (!topo.is_server(v)) continue;
    const topology::Node& node = topo.nodes[v];
    for (std::uint32_t g = 0; g < std::max<std::uint32_t>(1, node.gpus) && all.size() < limit;
         ++g) {
      all.push_back(Gpu{v, g, node.first_port + topology::nic_of_gpu(node, g)});
    }
  }
  return all;
}

}  // namespace

Result<Communicator> make_communicator(const topology::Topology& topo, int n) {
  Communicator c;
  c.gpus = gpus_of(topo, static_cast<std::size_t>(std::max(n, 0)));
  if (n < 1 || c.size() < n) {
    return Error{"--gpus " + std::to_string(n) + ": the topology has " + std::to_string(c.size()) +
                 " GPUs (allowed: 1.." + std::to_string(c.size()) + ")"};
  }
  const std::uint32_t per_server = std::max<std::uint32_t>(1, topo.nodes[c.gpus[0].server].gpus);
  for (const Gpu& g : c.gpus) {
    if (std::max<std::uint32_t>(1, topo.nodes[g.server].gpus) != per_server) {
      return Error{"servers with different GPU counts are not supported"};
    }
  }
  c.gpus_per_server = per_server;
  if (n > static_cast<int>(per_server) && n % static_cast<int>(per_server) != 0) {
    return Error{"--gpus " + std::to_string(n) + " must be a multiple of the " +
                 std::to_string(per_server) + " GPUs per server (or fit in one server)"};
  }
  return c;
}

Result<Communicator> make_communicator(const topology::Topology& topo,
                                       const std::vector<std::uint32_t>& gpus) {
  const std::uint32_t top = gpus.empty() ? 0 : *std::max_element(gpus.begin(), gpus.end());
  const std::vector<Gpu> all = gpus_of(topo, std::size_t{top} + 1);
  if (gpus.empty()) return Error{"a communicator needs at least one GPU"};
  Communicator c;
  for (std::uint32_t g : gpus) {
    if (g >= all.size()) {
      return Error{"GPU " + std::to_string(g) + " is not in the topology (it has " +
                   std::to_string(all.size()) + ")"};
    }
    c.gpus.push_back(all[g]);
  }
  // Members per server: the run of ranks on the first server, the same on every server.
  std::uint32_t per = 0;
  while (per < c.gpus.size() && c.gpus[per].server == c.gpus[0].server) ++per;
  std::vector<bool> seen(topo.nodes.size(), false);
  for (std::size_t i = 0; i < c.gpus.size(); ++i) {
    const topology::NodeId first = c.gpus[i - i % per].server;
    const bool starts = i % per == 0;
    if (c.gpus[i].server != first || c.gpus.size() % per != 0 || (starts && seen[first])) {
      return Error{
          "a communicator must take the same number of GPUs from each server, in "
          "consecutive ranks"};
    }
    seen[first] = true;
  }
  c.gpus_per_server = per;
  return c;
}

double nic_share(const Communicator& comm) {
  std::vector<topology::PortId> nics;
  std::size_t members = 0;
  for (const Gpu& g : comm.gpus) {
    if (g.server != comm.gpus[0].server) break;
    ++members;
    if (std::find(nics.begin(), nics.end(), g.nic) == nics.end()) nics.push_back(g.nic);
  }
  return members == 0
             ? 1.0
             : std::min(1.0, static_cast<double>(nics.size()) / static_cast<double>(members));
}

std::vector<std::uint32_t> gpu_of_nic_ports(const topology::Topology& topo) {
  std::vector<std::uint32_t> gpu(topo.ports.size(), topology::kNone);
  std::uint32_t first = 0;  // the server's first GPU, counted as gpus_of counts them
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v)) continue;
    const topology::Node& node = topo.nodes[v];
    const std::uint32_t gpus = std::max<std::uint32_t>(1, node.gpus);
    for (std::uint32_t i = 0; i < node.port_count; ++i) {
      gpu[node.first_port + i] = first + topology::gpu_of_nic(node, i);
    }
    first += gpus;
  }
  return gpu;
}

int nccl_p2p_channels_per_peer(int ranks, int servers, DataRate nic) {
  // graph/paths.cc: across servers a GPU's channels per peer are the fewest over its peers, the
  // network peers' max(NICs, ceil(NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW)) with one NIC per
  // GPU (NVLink peers have more); then rounded up to a power of 2 and halved while the
  // schedule's ceil(ranks / 8) groups on that many channels each exceed the p2p channels.
  constexpr int kPerChannelGbytes = 14;     // NCCL_P2P_PER_CHANNEL_NET_BW's default, GB/s
  constexpr int kP2pChannelsAcross = 16;    // p2p channels of a multi-server H100 communicator
  constexpr int kP2pChannelsInServer = 32;  // ... and of one H100 server
  if (servers <= 1) return kP2pChannelsInServer;
  const auto gbytes = static_cast<int>(static_cast<double>(nic.bits_per_second()) / 8e9);
  int c = std::max(1, (gbytes + kPerChannelGbytes - 1) / kPerChannelGbytes);
  int pow2 = 1;
  while (pow2 < c) pow2 *= 2;
  c = pow2;
  constexpr int kPerBatch = 8;  // NCCL_MAX_DEV_WORK_P2P_PER_BATCH
  const int groups = (std::max(ranks, 1) + kPerBatch - 1) / kPerBatch;
  while (c * groups > kP2pChannelsAcross && c > 1) c /= 2;
  return c;
}

CollectiveParams resolve_p2p(CollectiveParams p, Kind kind, int ranks, int servers, DataRate nic) {
  const bool deepep = is_ep_kind(kind);
  if (p.p2p_channels_per_peer == CollectiveParams::kP2pAuto) {
    p.p2p_channels_per_peer = deepep ? 2 : nccl_p2p_channels_per_peer(ranks, servers, nic);
  }
  if (p.p2p_nvl_chunk == CollectiveParams::kP2pAuto) {
    p.p2p_nvl_chunk = deepep || servers <= 1 ? std::int64_t{512} * 1024 : p.p2p_net_chunk;
  }
  return p;
}

}  // namespace stepsim::collective
