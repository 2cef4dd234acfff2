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
  table.choice("cc.algorithm", p.algorithm, congestion_control_names(), "congestion control");
  for (const auto& [name, entry] : entries()) {
    if (entry.params) entry.params(table, p);
  }
}

}  // namespace stepsim::cc
