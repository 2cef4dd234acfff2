#include "stepsim/cc/congestion_control.hpp"

#include <string>
#include <utility>
#include <vector>

#include "src/cc/cc_registry.hpp"
#include "stepsim/config/param_table.hpp"

namespace stepsim::cc {
namespace {

const char* const kCcWhat = "congestion control";

}  // namespace

std::vector<std::string> CongestionControl::Traits::words() const {
  if (!needs) return {};
  const CcNeeds n = needs(CcParams{});
  std::vector<std::string> out;
  if (n.cnp) out.emplace_back("CNPs for ECN marks");
  if (n.int_telemetry) out.emplace_back("INT telemetry");
  if (n.ack_per_packet) out.emplace_back("an ACK per packet");
  if (n.ack_echo) out.emplace_back("ACKs echo ECN and round trips");
  return out;
}

CcRegistration::CcRegistration(CcEntry entry) {
  CcRegistry::add(entry.name, std::move(entry.make), std::move(entry.description), {},
                  CongestionControl::Traits{std::move(entry.needs), std::move(entry.params)});
}

Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   const CcPath& path) {
  return CcRegistry::create(kCcWhat, p.algorithm, p, path);
}

Result<CcNeeds> congestion_control_needs(const CcParams& p) {
  const CongestionControl::Traits* t = CcRegistry::traits(p.algorithm);
  if (t == nullptr) return CcRegistry::unknown(kCcWhat, p.algorithm);
  return t->needs ? t->needs(p) : CcNeeds{};
}

std::vector<std::string> congestion_control_names() {
  return CcRegistry::names();
}

std::vector<CcAlgorithmInfo> congestion_control_algorithms() {
  std::vector<CcAlgorithmInfo> out;
  for (const RegistryInfo& info : CcRegistry::infos()) out.push_back({info.name, info.description});
  return out;
}

void declare_cc_params(config::ParamTable& table, CcParams& p) {
  std::vector<std::string> names = congestion_control_names();
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  table.add(
      {"cc.algorithm",
       "congestion control: " + listed + " (stepsim list cc; transport.kind uet without it: nscc)",
       [&p, names, listed](const std::string& t) -> Result<bool> {
         for (const std::string& n : names) {
           if (n != t) continue;
           p.algorithm = t;
           p.algorithm_chosen = true;
           return true;
         }
         return Error{"'" + t + "' is not allowed (allowed: " + listed + ")"};
       },
       [&p] { return p.algorithm; }},
      names);
  for (const std::string& name : names) {
    const CongestionControl::Traits* t = CcRegistry::traits(name);
    if (t->params) t->params(table, p);
  }
}

}  // namespace stepsim::cc
