#include "stepsim/cc/congestion_control.hpp"

#include <map>

#include "src/cc/cc_registry.hpp"
#include "stepsim/config/param_table.hpp"

namespace stepsim::cc {
namespace {

std::map<std::string, CcEntry>& entries() {
  static std::map<std::string, CcEntry> e;
  return e;
}

Result<const CcEntry*> find(const std::string& name) {
  const auto it = entries().find(name);
  if (it != entries().end()) return &it->second;
  std::string known;
  for (const std::string& n : congestion_control_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown congestion control '" + name + "' (allowed: " + known + ")"};
}

}  // namespace

CcRegistration::CcRegistration(CcEntry entry) {
  std::string name = entry.name;
  entries().emplace(std::move(name), std::move(entry));
}

Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   const CcPath& path) {
  auto e = find(p.algorithm);
  if (!e) return e.error();
  return (*e)->make(p, path);
}

Result<CcNeeds> congestion_control_needs(const CcParams& p) {
  auto e = find(p.algorithm);
  if (!e) return e.error();
  return (*e)->needs ? (*e)->needs(p) : CcNeeds{};
}

std::vector<std::string> congestion_control_names() {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries()) out.push_back(name);
  return out;
}

std::vector<CcAlgorithmInfo> congestion_control_algorithms() {
  std::vector<CcAlgorithmInfo> out;
  for (const auto& [name, entry] : entries()) out.push_back({name, entry.description});
  return out;
}

void declare_cc_params(config::ParamTable& table, CcParams& p) {
  std::vector<std::string> names = congestion_control_names();
  table.add({"cc.algorithm", "congestion control (transport.kind uet without it: nscc)",
             [&p, names](const std::string& t) -> Result<bool> {
               for (const std::string& n : names) {
                 if (n != t) continue;
                 p.algorithm = t;
                 p.algorithm_chosen = true;
                 return true;
               }
               std::string allowed;
               for (const std::string& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
               return Error{"'" + t + "' is not allowed (allowed: " + allowed + ")"};
             },
             [&p] { return p.algorithm; }},
            names);
  for (const auto& [name, entry] : entries()) {
    if (entry.params) entry.params(table, p);
  }
}

}  // namespace stepsim::cc
