// Traffic patterns over the NICs of a topology: permutation (every NIC sends to one other and
// receives from one), incast (N senders to one receiver), all-to-all, hot-spot (a share of the
// flows to one NIC, the rest uniform), pair (many QPs between two NICs, for hash polarization).
#include "stepsim/fabric/traffic.hpp"

#include <algorithm>

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

}  // namespace

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
  std::vector<Flow> flows;
  auto add = [&](PortId src, PortId dst) {
    Flow f;
    f.id = static_cast<std::uint32_t>(flows.size());
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
    flows.push_back(f);
  };
  const std::string& p = spec.pattern;
  if (p == "permutation") {
    // A random derangement per rail: nobody sends to itself.
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
      for (std::size_t i = 0; i < nics.size(); ++i) add(nics[i], dst[i]);
    }
  } else if (p == "incast") {
    const auto& nics = rails[0];
    if (spec.senders < 1 || spec.senders >= nics.size()) {
      return Error{"incast needs 1.." + std::to_string(nics.size() - 1) +
                   " senders on rail 0, got " + std::to_string(spec.senders)};
    }
    for (std::uint32_t i = 1; i <= spec.senders; ++i) add(nics[i], nics[0]);
  } else if (p == "all_to_all") {
    for (const auto& nics : rails) {
      for (PortId s : nics) {
        for (PortId d : nics) {
          if (s != d) add(s, d);
        }
      }
    }
  } else if (p == "hotspot") {
    for (const auto& nics : rails) {
      const PortId hot = nics[0];
      for (std::size_t i = 1; i < nics.size(); ++i) {
        PortId d = hot;
        if (!rng.bernoulli(spec.hot_fraction)) {
          do {
            d = nics[rng.below(static_cast<std::uint32_t>(nics.size()))];
          } while (d == nics[i]);
        }
        add(nics[i], d);
      }
    }
  } else if (p == "pair") {
    const auto& nics = rails[0];
    for (std::uint32_t q = 0; q < spec.qps; ++q) add(nics[0], nics[nics.size() - 1]);
  } else {
    return Error{"unknown traffic pattern '" + p +
                 "' (allowed: permutation, incast, all_to_all, hotspot, pair)"};
  }
  return flows;
}

}  // namespace stepsim::fabric
