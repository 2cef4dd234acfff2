#include "stepsim/fabric/fabric_params.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "stepsim/topology/topology.hpp"

namespace stepsim::fabric {

Result<bool> FabricParams::validate() const {
  if (sw.buffer.count() <= 0) return Error{"switch buffer must be positive"};
  if (!(sw.dt_alpha > 0)) return Error{"switch dt_alpha must be positive"};
  if (ecn.enabled && !(ecn.kmin < ecn.kmax)) {
    return Error{"ECN needs kmin < kmax (got " + to_string(ecn.kmin) + ", " + to_string(ecn.kmax) +
                 ")"};
  }
  if (!(ecn.pmax >= 0 && ecn.pmax <= 1)) return Error{"ECN pmax must be in [0, 1]"};
  if (pfc.enabled && !(pfc.xon < pfc.xoff)) {
    return Error{"PFC needs xon < xoff (got " + to_string(pfc.xon) + ", " + to_string(pfc.xoff) +
                 ")"};
  }
  if (pfc.priority > 7) return Error{"PFC priority must be 0..7"};
  if (mtu.count() < 64 || mtu.count() > 65536) return Error{"mtu must be 64..65536 bytes"};
  if (cell.count() != 0 && (cell < mtu || cell.count() > kMaxCellBytes)) {  // fabric.cell's bound
    return Error{"fabric.cell (" + to_string(cell) + ") is out of range (from the mtu, " +
                 to_string(mtu) + ", to " + to_string(Bytes(kMaxCellBytes)) + ")"};
  }
  if (burst_symbols < 1 || burst_symbols > 15) return Error{"burst_symbols must be 1..15"};
  if (ber_override > 0.5) return Error{"BER must be at most 0.5"};
  for (double b : lane_ber) {
    if (!(b >= 0 && b <= 0.5)) return Error{"every lane BER must be in [0, 0.5]"};
  }
  if (routing != "minimal" && routing != "valiant") {
    return Error{"unknown routing '" + routing + "' (allowed: minimal, valiant)"};
  }
  return true;
}

namespace {

// fabric.ber: "topology" (each link's own BER) or one pre-FEC BER for every link.
config::Param ber_param(double& field) {
  return config::Param{
      "fabric.ber", "pre-FEC bit error rate of every link, 0..0.5, or 'topology' (each link's own)",
      [&field](const std::string& t) -> Result<bool> {
        if (t == "topology") {
          field = -1;
          return true;
        }
        double v = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) {
          return Error{"'" + t + "' is not a number (allowed: 0..0.5 or topology)"};
        }
        if (v < 0 || v > 0.5) return Error{"'" + t + "' is out of range (0..0.5 or topology)"};
        field = v;
        return true;
      },
      [&field] {
        if (field < 0) return std::string("topology");
        std::ostringstream s;
        s << field;
        return s.str();
      }};
}

}  // namespace

config::ParamTable fabric_param_table(FabricParams& p) {
  config::ParamTable t;
  const std::int64_t big = std::int64_t{1} << 34;  // 16 GiB
  std::string policies;
  for (const std::string& n : load_balancer_names()) policies += (policies.empty() ? "" : ", ") + n;
  t.add({"fabric.lb",
         "load-balancing policy among equal-cost ports: " + policies + " (stepsim list lb)",
         [&p](const std::string& name) -> Result<bool> {
           LbParams lb = p.lb;
           lb.policy = name;
           if (auto made = make_load_balancer(lb, 0); !made) return made.error();
           p.lb.policy = name;
           return true;
         },
         [&p] { return p.lb.policy; }},
        load_balancer_names());
  t.time("fabric.flowlet_timeout", p.lb.flowlet_timeout, SimTime::ns(1), SimTime::s(1),
         "flowlet: idle gap after which a flow may take a new path");
  t.choice("fabric.routing", p.routing, {"minimal", "valiant"},
           "minimal (shortest paths) or valiant (dragonfly: via a random third group)");
  t.boolean("fabric.reroute", p.reroute, "avoid down ports when another equal-cost port exists");
  t.bytes("fabric.mtu", p.mtu, 64, 65536, "payload bytes per packet");
  // One bound, the MTU, for `run --set fabric.cell` and `bench ... --cell` alike: a cell is cut
  // through the fabric with the wire time of the MTU packets it stands for, so a cell below one
  // packet would stand for a fraction of a packet. validate() checks it again once the MTU is
  // final (an MTU set after the cell).
  t.add({"fabric.cell",
         "cell fidelity: payload bytes per cell, from fabric.mtu to " +
             to_string(Bytes(kMaxCellBytes)) + " (cut-through, the wire time of its MTU packets)",
         [&p](const std::string& text) -> Result<bool> {
           auto v = parse_bytes(text);
           if (!v) return v.error();
           if (*v < p.mtu || v->count() > kMaxCellBytes) {
             return Error{"'" + text + "' is out of range (from the mtu, " + to_string(p.mtu) +
                          ", to " + to_string(Bytes(kMaxCellBytes)) + ")"};
           }
           p.cell_size = *v;
           return true;
         },
         [&p] { return to_string(p.cell_size); }});
  t.bytes("fabric.buffer", p.sw.buffer, 1, big,
          "shared packet buffer per switch (at least PFC XOFF + headroom when PFC is on)");
  t.real("fabric.dt_alpha", p.sw.dt_alpha, 1.0 / 64, 64,
         "lossy dynamic threshold: an egress queue may hold alpha x the free buffer");
  t.time("fabric.switch_latency", p.sw.latency, SimTime::ns(1), SimTime::us(100),
         "switch forwarding pipeline latency");
  t.boolean("fabric.cut_through", p.sw.cut_through,
            "forward after the header (false: store-and-forward, after the tail)");
  t.boolean("fabric.ecn", p.ecn.enabled, "RED/ECN marking on egress queues");
  t.bytes("fabric.ecn_kmin", p.ecn.kmin, 0, big, "ECN: queue bytes where marking starts");
  t.bytes("fabric.ecn_kmax", p.ecn.kmax, 1, big, "ECN: queue bytes where marking reaches pmax");
  t.real("fabric.ecn_pmax", p.ecn.pmax, 0, 1, "ECN: marking probability at kmax (1 above)");
  t.boolean("fabric.pfc", p.pfc.enabled, "PFC on the lossless class (false: lossy fabric)");
  t.boolean("fabric.trimming", p.trimming,
            "packet trimming: a data packet of a lossy class that finds no buffer is cut to its "
            "headers and sent first (on/off)");
  t.bytes("fabric.pfc_xoff", p.pfc.xoff, 1, big, "PFC: ingress bytes above which PAUSE is sent");
  t.bytes("fabric.pfc_xon", p.pfc.xon, 0, big, "PFC: ingress bytes at or below which RESUME");
  t.bytes("fabric.pfc_headroom", p.pfc.headroom, 0, big,
          "PFC: bytes above XOFF per ingress port; 0 = computed per port from its cable");
  t.time("fabric.pfc_switch_delay", p.pfc.switch_delay, SimTime::zero(), SimTime::us(100),
         "PFC headroom formula's T_switch (at least the switch latency is used)");
  t.time("fabric.pfc_nic_delay", p.pfc.nic_delay, SimTime::zero(), SimTime::us(100),
         "PFC headroom formula's T_nic");
  t.boolean("fabric.fec", p.fec, "KP4 FEC on every link (false: any bit error loses the frame)");
  t.integer("fabric.burst_symbols", p.burst_symbols, 1, 15,
            "FEC error bursts: symbols each error event corrupts (1 = independent)");
  t.add(ber_param(p.ber_override));
  return t;
}

void add_flapping(std::vector<FaultSpec>& faults, std::uint32_t link, SimTime start, SimTime period,
                  SimTime down_for, int times) {
  for (int i = 0; i < times; ++i) {
    const SimTime t = start + period * i;
    faults.push_back({FaultSpec::Kind::kDown, link, t, 0});
    faults.push_back({FaultSpec::Kind::kUp, link, t + down_for, 0});
  }
}

}  // namespace stepsim::fabric

namespace stepsim::fabric {
namespace {

Error fault_error(const std::string& text, const std::string& why) {
  return Error{"fault '" + text + "': " + why +
               " (forms: down:LINK@TIME, up:LINK@TIME, lanes:LINK@TIME=N, "
               "flap:LINK@START,PERIOD,DOWN,COUNT; e.g. down:17@20us)"};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Result<std::int64_t> whole(const std::string& text, const std::string& s, const char* what) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) {
    return fault_error(text, std::string(what) + " '" + s + "' is not a whole number");
  }
  return std::stoll(s);
}

// A well-formed fault beyond what a run can hold (no list of forms: the form is right).
Error bound_error(const std::string& text, const std::string& why) {
  return Error{"fault '" + text + "': " + why};
}

// flap:LINK@START,PERIOD,DOWN,COUNT with `rest` the part after '@'. COUNT is bounded (each cycle
// is an event pair in memory) and so is the end of the last cycle (SimTime's range).
Result<bool> parse_flap(const std::string& text, std::uint32_t link, const std::string& rest,
                        std::vector<FaultSpec>& faults) {
  const auto parts = split(rest, ',');
  if (parts.size() != 4) return fault_error(text, "flap needs START,PERIOD,DOWN,COUNT");
  SimTime t[3];
  for (int i = 0; i < 3; ++i) {
    auto v = parse_time(parts[static_cast<std::size_t>(i)]);
    if (!v) return fault_error(text, v.error().message);
    t[i] = *v;
  }
  const std::string& count_text = parts[3];
  if (count_text.empty() || count_text.find_first_not_of("0123456789") != std::string::npos) {
    return fault_error(text, "count '" + count_text + "' is not a whole number");
  }
  std::int64_t count = 0;  // saturates just past the bound
  for (const char c : count_text) count = std::min(count * 10 + (c - '0'), kMaxFlapCount + 1);
  if (count > kMaxFlapCount) {
    return bound_error(text, "COUNT " + count_text + " is out of range (0.." +
                                 std::to_string(kMaxFlapCount) + " flaps)");
  }
  const Int128 last = static_cast<Int128>(t[0].picoseconds()) +
                      static_cast<Int128>(t[1].picoseconds()) * count + t[2].picoseconds();
  if (last > kLatestFault.picoseconds()) {
    return bound_error(text, "the last flap ends after " + to_string(kLatestFault) +
                                 " (START + PERIOD x COUNT + DOWN must be at most that)");
  }
  if (!(t[2] < t[1])) return fault_error(text, "the link must be down for less than the period");
  add_flapping(faults, link, t[0], t[1], t[2], static_cast<int>(count));
  return true;
}

}  // namespace

Result<bool> parse_fault(const std::string& text, std::span<const int> lanes_of_link,
                         std::vector<FaultSpec>& faults) {
  const auto links = static_cast<std::uint32_t>(lanes_of_link.size());
  const auto colon = text.find(':');
  const auto at = text.find('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon) {
    return fault_error(text, "expected KIND:LINK@...");
  }
  const std::string kind = text.substr(0, colon);
  const std::string link_text = text.substr(colon + 1, at - colon - 1);
  auto link = whole(text, link_text, "link");
  if (!link) return link.error();
  if (*link >= links) {
    return fault_error(text, "link " + std::to_string(*link) +
                                 " does not exist (the topology has " + std::to_string(links) +
                                 " links, 0.." + std::to_string(links - 1) + ")");
  }
  const auto l = static_cast<std::uint32_t>(*link);
  std::string rest = text.substr(at + 1);
  if (kind == "flap") return parse_flap(text, l, rest, faults);
  int lanes = 0;
  if (kind == "lanes") {
    const auto eq = rest.find('=');
    if (eq == std::string::npos) return fault_error(text, "lanes needs =N (lanes left)");
    const std::string n_text = rest.substr(eq + 1);
    const int port_lanes = lanes_of_link[l];
    if (!n_text.empty() && n_text.find_first_not_of("0123456789") == std::string::npos &&
        (n_text.size() > 9 || std::stoll(n_text) > port_lanes)) {
      return bound_error(text, "lanes left " + n_text + " is out of range (1.." +
                                   std::to_string(port_lanes) + ", the lanes of link " + link_text +
                                   "'s port)");
    }
    auto n = whole(text, n_text, "lane count");
    if (!n) return n.error();
    if (*n < 1) return fault_error(text, "at least one lane must be left");
    lanes = static_cast<int>(*n);
    rest = rest.substr(0, eq);
  } else if (kind != "down" && kind != "up") {
    return fault_error(text, "unknown kind '" + kind + "'");
  }
  auto t = parse_time(rest);
  if (!t) return fault_error(text, t.error().message);
  if (*t > kLatestFault) {
    return bound_error(text, "the time is out of range (0.." + to_string(kLatestFault) + ")");
  }
  const FaultSpec::Kind k = kind == "down" ? FaultSpec::Kind::kDown
                            : kind == "up" ? FaultSpec::Kind::kUp
                                           : FaultSpec::Kind::kLanes;
  faults.push_back({k, l, *t, lanes});
  return true;
}

Result<bool> parse_fault(const std::string& text, const topology::Topology& topo,
                         std::vector<FaultSpec>& faults) {
  std::vector<int> lanes;
  lanes.reserve(topo.links.size());
  for (const topology::Link& x : topo.links) lanes.push_back(topo.port_types[x.port_type].lanes);
  return parse_fault(text, lanes, faults);
}

}  // namespace stepsim::fabric
