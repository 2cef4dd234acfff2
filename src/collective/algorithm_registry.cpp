// The collective algorithms' registry (the Registry template, in rank order: the listing's and the
// tuner's on ties) and the eligibility questions every caller asks it.
#include <algorithm>
#include <memory>

#include "src/collective/algorithm_declarations.hpp"

namespace stepsim::collective {

const std::vector<const CollectiveAlgorithm*>& collective_algorithms() {
  static const std::vector<const CollectiveAlgorithm*> all = AlgorithmRegistry::instances();
  return all;
}

bool AlgorithmSupport::has_kind(Kind k) const {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

bool AlgorithmSupport::has_protocol(Protocol p) const {
  return std::find(protocols.begin(), protocols.end(), p) != protocols.end();
}

CollectiveShape CollectiveShape::of(Kind kind, std::int64_t bytes, int gpus,
                                    std::uint32_t gpus_per_server) {
  CollectiveShape s;
  s.kind = kind;
  s.bytes = bytes;
  s.gpus = gpus;
  s.gpus_per_server = static_cast<int>(
      std::min<std::uint32_t>(gpus_per_server, static_cast<std::uint32_t>(std::max(gpus, 1))));
  s.servers = (gpus + s.gpus_per_server - 1) / s.gpus_per_server;
  return s;
}

std::vector<std::string> selectable_algorithms() {
  std::vector<std::string> names;
  for (const CollectiveAlgorithm* a : collective_algorithms()) {
    if (std::find(names.begin(), names.end(), a->selected_by()) == names.end()) {
      names.push_back(a->selected_by());
    }
  }
  return names;
}

std::string selectable_algorithms_help() {
  std::string out;
  for (const std::string& value : selectable_algorithms()) {
    std::string parts;
    for (const CollectiveAlgorithm* a : collective_algorithms()) {
      if (a->selected_by() != value) continue;
      const AlgorithmSupport sup = a->support();
      std::string part = a->name() == value ? "" : a->name() + ": ";
      for (std::size_t i = 0; i < sup.kinds.size(); ++i) {
        part += (i == 0 ? "" : ", ") + kind_name(sup.kinds[i]);
      }
      if (sup.servers == Servers::kOne) part += ", one server";
      if (sup.servers == Servers::kSeveral) part += ", 2+ whole servers";
      if (sup.needs_nvls) part += ", NVLS GPUs";
      if (sup.needs_sharp) part += ", SHARP switches";
      parts += (parts.empty() ? "" : "; ") + part;
    }
    out += (out.empty() ? "" : ", ") + value + " (" + parts + ")";
  }
  return out;
}

const CollectiveAlgorithm* find_algorithm(const std::string& selected, Kind kind) {
  for (const CollectiveAlgorithm* a : collective_algorithms()) {
    if (a->selected_by() == selected && a->support().has_kind(kind)) return a;
  }
  return nullptr;
}

bool shape_allows(const CollectiveAlgorithm& a, const CollectiveShape& s) {
  const AlgorithmSupport sup = a.support();
  if (!sup.has_kind(s.kind) || s.gpus_per_server < sup.min_gpus_per_server) return false;
  switch (sup.servers) {
    case Servers::kOne:
      return s.servers == 1;
    case Servers::kSeveral:
      return s.servers >= 2 && s.gpus % s.gpus_per_server == 0;
    default:
      return true;
  }
}

namespace {

// The algorithm that runs `kind` when the user names none that can: the ring's family.
const CollectiveAlgorithm& default_for(Kind kind) {
  const CollectiveAlgorithm* a = find_algorithm("ring", kind);
  return a != nullptr ? *a : *AlgorithmRegistry::instance("ring");
}

// What the kinds `selected` runs are, for an error message ("allreduce").
std::string kinds_of(const std::string& selected) {
  std::string out;
  for (const CollectiveAlgorithm* a : collective_algorithms()) {
    if (a->selected_by() != selected) continue;
    for (Kind k : a->support().kinds) out += (out.empty() ? "" : ", ") + kind_name(k);
  }
  return out;
}

Error servers_error(const CollectiveAlgorithm& a, const CollectiveShape& s) {
  const std::string head = "coll.algorithm: " + a.selected_by();
  if (a.support().servers == Servers::kOne) {
    return Error{head + " needs the GPUs in one server (one NVLink domain)" +
                 (a.support().needs_nvls ? "; across servers: nvls_tree or nvls_sharp" : "")};
  }
  return Error{head + " needs whole servers, at least two (got " + std::to_string(s.gpus) +
               " GPUs, " + std::to_string(s.gpus_per_server) + " per server)"};
}

}  // namespace

Result<const CollectiveAlgorithm*> check_algorithm(const std::string& selected,
                                                   const CollectiveShape& s,
                                                   const CollectiveParams& p) {
  const CollectiveAlgorithm* a = find_algorithm(selected, s.kind);
  if (a == nullptr) {
    return Error{"coll.algorithm: " + selected + " is for " + kinds_of(selected) +
                 " only (allowed for " + kind_name(s.kind) + ": ring)"};
  }
  if (s.gpus_per_server < a->support().min_gpus_per_server) {
    return Error{"coll.algorithm: " + selected + " needs at least " +
                 std::to_string(a->support().min_gpus_per_server) +
                 " GPUs per server (NCCL does not use NVLS with " +
                 std::to_string(s.gpus_per_server) + ")"};
  }
  if (!shape_allows(*a, s)) return servers_error(*a, s);
  if (a->support().needs_nvls && p.nvls_efficiency <= 0) {
    return Error{"coll.algorithm: " + selected + " needs NVLink SHARP, which " + p.gpu +
                 " does not have (gpu.nvls_efficiency 0)"};
  }
  return a;
}

Result<bool> check_protocol(const CollectiveAlgorithm& a, const std::string& protocol) {
  auto pr = parse_protocol(protocol);
  if (pr && a.support().has_protocol(*pr)) return true;
  std::string allowed;
  for (Protocol q : a.support().protocols) {
    allowed += (allowed.empty() ? "" : ", ") + protocol_name(q);
  }
  return Error{"coll.protocol: " + a.selected_by() + " runs with the " + allowed +
               " protocol (got " + protocol + ")"};
}

std::vector<const CollectiveAlgorithm*> tuner_candidates(const CollectiveShape& s) {
  std::vector<const CollectiveAlgorithm*> out;
  for (const CollectiveAlgorithm* a : collective_algorithms()) {
    const AlgorithmSupport sup = a->support();
    if (sup.tuned && s.gpus >= sup.tuned_min_gpus &&
        s.gpus_per_server >= sup.tuned_min_gpus_per_server && shape_allows(*a, s)) {
      out.push_back(a);
    }
  }
  return out;
}

std::vector<const CollectiveAlgorithm*> tuner_candidates(const CollectiveShape& s,
                                                         const CollectiveParams& p) {
  std::vector<const CollectiveAlgorithm*> out;
  for (const CollectiveAlgorithm* a : tuner_candidates(s)) {
    const AlgorithmSupport sup = a->support();
    if (sup.needs_nvls && p.nvls_efficiency <= 0) continue;
    if (sup.needs_sharp && p.sharp_enable == 0) continue;
    const auto& ex = p.tuner_excluded_algorithms;
    if (std::find(ex.begin(), ex.end(), a->selected_by()) != ex.end()) continue;
    out.push_back(a);
  }
  return out;
}

bool runs_concurrently(const CollectiveParams& p, Kind kind) {
  if (p.algorithm == "auto") return p.sharp_enable == 0;  // SHARP holds the switches alone
  const CollectiveAlgorithm* a = find_algorithm(p.algorithm, kind);
  return a != nullptr && a->support().concurrent;
}

CollectiveParams applicable_params(const CollectiveParams& p, const CollectiveShape& s) {
  CollectiveParams q = p;
  if (p.algorithm == "auto") return q;
  const CollectiveAlgorithm* a = find_algorithm(p.algorithm, s.kind);
  if (a == nullptr || !shape_allows(*a, s)) {
    a = &default_for(s.kind);
    q.algorithm = a->selected_by();
  }
  const AlgorithmSupport sup = a->support();
  const auto pr = parse_protocol(p.protocol);
  const bool keep = p.protocol == "auto" ? sup.protocols.size() > 1 : pr && sup.has_protocol(*pr);
  if (!keep) q.protocol = protocol_name(sup.protocols.front());
  return q;
}

}  // namespace stepsim::collective
