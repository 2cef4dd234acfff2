// Traffic patterns over the NICs of a topology: permutation (every NIC sends to one other and
// receives from one), incast (N senders to one receiver), all-to-all, hot-spot (a share of the
// flows to one NIC, the rest uniform), pair (many QPs between two NICs, for hash polarization).
#include "stepsim/fabric/traffic.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/pdes/rng.hpp"

namespace stepsim::fabric {
namespace {

using topology::PortId;

// NICs grouped by rail (index within the server), servers in id order.
std::vector<std::vector<PortId>> nics_by_rail(const topology::Topology& topo) {
  std::vector<std::vector<PortId>> rails;
  for (topology::NodeId v = 0; v < topo.nodes.size(); ++v) {
    if (!topo.is_server(v)) continue;
    for (const topology::Port& p : topo.ports_of(v)) {
      if (p.link == topology::kNone) continue;
      if (rails.size() <= p.index) rails.resize(p.index + 1);
      rails[p.index].push_back(topo.port_id(v, p.index));
    }
  }
  return rails;
}

void shuffle(std::vector<PortId>& v, pdes::Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[rng.below(static_cast<std::uint32_t>(i))]);
  }
}

using Rails = std::vector<std::vector<PortId>>;
using Pair = std::pair<PortId, PortId>;

// Flow `id` from `src` to `dst` with the spec's size, timing, class and entropy.
Flow flow_of(std::uint32_t id, PortId src, PortId dst, const TrafficSpec& spec) {
  Flow f;
  f.id = id;
  f.src_nic = src;
  f.dst_nic = dst;
  f.bytes = spec.flow_bytes;
  f.start = spec.start;
  f.rate = spec.rate;
  f.window = spec.window;
  f.prio = spec.prio;
  f.qp = 0x100 + f.id;
  switch (spec.entropy) {
    case Entropy::kFixed:
      f.entropy = 49152;
      break;
    case Entropy::kUdpSport:
      f.entropy = static_cast<std::uint16_t>(49152 + (f.qp * 2654435761u >> 18) % 16384);
      break;
    case Entropy::kFlowLabel:
      f.entropy = 49152;
      f.label = roce_flow_label(f.qp, f.qp + 1, src, dst);
      break;
  }
  return f;
}

// A random derangement per rail: nobody sends to itself.
void add_permutation(const Rails& rails, pdes::Rng& rng, std::vector<Pair>& out) {
  for (const auto& nics : rails) {
    if (nics.size() < 2) continue;
    std::vector<PortId> dst = nics;
    do {
      shuffle(dst, rng);
    } while ([&] {
      for (std::size_t i = 0; i < nics.size(); ++i) {
        if (dst[i] == nics[i]) return true;
      }
      return false;
    }());
    for (std::size_t i = 0; i < nics.size(); ++i) out.emplace_back(nics[i], dst[i]);
  }
}

// Per rail, every NIC but the first sends to the first with probability `hot`, else to another
// NIC drawn uniformly.
void add_hotspot(const Rails& rails, double hot, pdes::Rng& rng, std::vector<Pair>& out) {
  for (const auto& nics : rails) {
    const PortId hot_nic = nics[0];
    for (std::size_t i = 1; i < nics.size(); ++i) {
      PortId d = hot_nic;
      if (!rng.bernoulli(hot)) {
        do {
          d = nics[rng.below(static_cast<std::uint32_t>(nics.size()))];
        } while (d == nics[i]);
      }
      out.emplace_back(nics[i], d);
    }
  }
}

// The (source, destination) NIC of every flow of the spec's pattern, in flow order.
Result<std::vector<Pair>> pairs_of(const TrafficSpec& spec, const Rails& rails, pdes::Rng& rng) {
  std::vector<Pair> out;
  const std::string& p = spec.pattern;
  if (p == "permutation") {
    add_permutation(rails, rng, out);
  } else if (p == "incast") {
    const auto& nics = rails[0];
    if (spec.senders < 1 || spec.senders >= nics.size()) {
      return Error{"incast needs 1.." + std::to_string(nics.size() - 1) +
                   " senders on rail 0, got " + std::to_string(spec.senders)};
    }
    for (std::uint32_t i = 1; i <= spec.senders; ++i) out.emplace_back(nics[i], nics[0]);
  } else if (p == "all_to_all") {
    for (const auto& nics : rails) {
      for (PortId s : nics) {
        for (PortId d : nics) {
          if (s != d) out.emplace_back(s, d);
        }
      }
    }
  } else if (p == "hotspot") {
    add_hotspot(rails, spec.hot_fraction, rng, out);
  } else if (p == "pair") {
    const auto& nics = rails[0];
    for (std::uint32_t q = 0; q < spec.qps; ++q) out.emplace_back(nics[0], nics[nics.size() - 1]);
  } else {
    std::string allowed;
    for (const std::string& n : traffic_patterns()) allowed += (allowed.empty() ? "" : ", ") + n;
    return Error{"unknown traffic pattern '" + p + "' (allowed: " + allowed + ")"};
  }
  return out;
}

}  // namespace

const std::vector<std::string>& traffic_patterns() {
  static const std::vector<std::string> all{"permutation", "incast", "all_to_all", "hotspot",
                                            "pair"};
  return all;
}

Result<Entropy> parse_entropy(const std::string& name) {
  if (name == "fixed") return Entropy::kFixed;
  if (name == "udp_sport") return Entropy::kUdpSport;
  if (name == "flow_label") return Entropy::kFlowLabel;
  return Error{"unknown entropy '" + name + "' (allowed: fixed, udp_sport, flow_label)"};
}

Result<std::vector<Flow>> make_flows(const topology::Topology& topo, const TrafficSpec& spec) {
  if (spec.flow_bytes <= 0) return Error{"flow size must be positive"};
  const auto rails = nics_by_rail(topo);
  if (rails.empty() || rails[0].size() < 2)
    return Error{"traffic needs at least two NICs on a rail"};
  pdes::Rng rng(spec.seed, /*entity=*/0x7472616666ULL, /*stream=*/0);
  auto pairs = pairs_of(spec, rails, rng);
  if (!pairs) return pairs.error();
  std::vector<Flow> flows;
  flows.reserve(pairs->size());
  for (const auto& [src, dst] : *pairs) {
    flows.push_back(flow_of(static_cast<std::uint32_t>(flows.size()), src, dst, spec));
  }
  return flows;
}

}  // namespace stepsim::fabric
