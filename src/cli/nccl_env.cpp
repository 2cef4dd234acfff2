#include "src/cli/nccl_env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace stepsim::cli {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// NCCL's algorithm names (case-insensitive, as NCCL reads them) and the stepsim algorithm each
// runs in one server and across servers. CollNet is SHARP; NVLS across servers is NVLS inside
// them and SHARP between them. `listed`: named in the errors' "allowed" (CollNet is NCCL's older
// spelling, accepted).
struct NcclAlgorithmName {
  const char* nccl;
  const char* one_server;
  const char* across_servers;
  bool listed;
};
constexpr std::array<NcclAlgorithmName, 7> kNcclAlgorithms{{
    {"Ring", "ring", "ring", true},
    {"Tree", "tree", "tree", true},
    {"NVLS", "nvls", "nvls_sharp", true},
    {"NVLSTree", "nvls_tree", "nvls_tree", true},
    {"CollNetDirect", "sharp", "sharp", true},
    {"CollNetChain", "sharp", "sharp", true},
    {"CollNet", "sharp", "sharp", false},
}};

// NCCL's protocol names and stepsim's.
constexpr std::array<std::pair<const char*, const char*>, 3> kNcclProtocols{{
    {"Simple", "simple"},
    {"LL", "ll"},
    {"LL128", "ll128"},
}};

// "Ring, Tree, ... or CollNetChain": the names an error allows.
template <class Names, class Name>
std::string allowed_names(const Names& names, Name name_of) {
  std::vector<std::string> listed;
  for (const auto& n : names) {
    if (const char* name = name_of(n)) listed.emplace_back(name);
  }
  std::string out;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == listed.size() ? " or " : ", ") + listed[i];
  }
  return out;
}

const std::string& algorithms_allowed() {
  static const std::string text = allowed_names(
      kNcclAlgorithms, [](const NcclAlgorithmName& n) { return n.listed ? n.nccl : nullptr; });
  return text;
}

const std::string& protocols_allowed() {
  static const std::string text =
      allowed_names(kNcclProtocols, [](const auto& n) -> const char* { return n.first; });
  return text;
}

// The stepsim algorithms NCCL name `nccl` stands for: the one it runs at `servers`, or (servers
// 0) every one it can run (NVLS is nvls in a server and nvls_sharp across servers); empty when
// NCCL has no such name.
std::vector<std::string> algorithms_of(const std::string& nccl, int servers) {
  const std::string n = lower(nccl);
  for (const NcclAlgorithmName& a : kNcclAlgorithms) {
    if (lower(a.nccl) != n) continue;
    if (servers == 0 && std::string(a.one_server) != a.across_servers) {
      return {a.one_server, a.across_servers};
    }
    return {servers > 1 ? a.across_servers : a.one_server};
  }
  return {};
}

std::optional<std::string> protocol_of(const std::string& nccl) {
  const std::string n = lower(nccl);
  for (const auto& [name, ours] : kNcclProtocols) {
    if (lower(name) == n) return ours;
  }
  return std::nullopt;
}

Result<int> whole_number(const char* var, const std::string& text, int lo, int hi) {
  const bool digits =
      !text.empty() && text.size() <= 9 &&
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const int v = digits ? std::atoi(text.c_str()) : -1;
  if (!digits || v < lo || v > hi) {
    return Error{std::string(var) + ": '" + text + "' is not allowed (allowed: a whole number " +
                 std::to_string(lo) + ".." + std::to_string(hi) + ")"};
  }
  return v;
}

// Every stepsim algorithm NCCL_ALGO can name, once each, in the table's order.
const std::vector<std::string>& nccl_algorithm_list() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (const NcclAlgorithmName& a : kNcclAlgorithms) {
      for (const std::string& name : algorithms_of(a.nccl, 0)) {
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      }
    }
    return out;
  }();
  return all;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

// A list ("a,b": only those) or an exclusion ("^a,b") of `var` as the names excluded out of
// `all`; `map` gives a name's stepsim names (none: unknown).
Result<std::vector<std::string>> excluded(
    const char* var, const std::string& v, const std::vector<std::string>& all,
    const std::function<std::vector<std::string>(const std::string&)>& map,
    const std::string& allowed) {
  const bool exclude = v.starts_with("^");
  std::vector<std::string> named;
  for (const std::string& item : split(exclude ? v.substr(1) : v)) {
    const std::vector<std::string> m = map(item);
    if (m.empty()) {
      return Error{std::string(var) + ": '" + item + "' in '" + v + "' is not allowed (allowed: " +
                   allowed + ", as one name, a list a,b or an " + "exclusion ^a,b)"};
    }
    named.insert(named.end(), m.begin(), m.end());
  }
  std::vector<std::string> out;
  for (const std::string& a : all) {
    const bool in = std::find(named.begin(), named.end(), a) != named.end();
    if (in == exclude) out.push_back(a);
  }
  if (out.size() == all.size()) {
    return Error{std::string(var) + ": '" + v + "' leaves the tuner nothing to choose"};
  }
  return out;
}

}  // namespace

const std::vector<std::string>& nccl_algorithms() {
  return nccl_algorithm_list();
}

const std::vector<std::string>& nccl_protocols() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (const auto& [name, ours] : kNcclProtocols) out.emplace_back(ours);
    return out;
  }();
  return all;
}

int NcclEnv::channels_or(int fallback) const {
  if (channels) return *channels;
  int c = fallback;
  if (min_channels) c = std::max(c, *min_channels);
  if (max_channels) c = std::min(c, *max_channels);
  return c;
}

Result<NcclEnv> read_nccl_env(int servers, const std::function<const char*(const char*)>& get) {
  auto value = [&](const char* var) -> std::optional<std::string> {
    const char* v = get ? get(var) : std::getenv(var);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  NcclEnv env;
  auto note = [&](const char* var, const std::string& v) {
    env.info.push_back(std::string(var) + " set by environment to " + v);
  };
  if (auto v = value("NCCL_ALGO")) {
    if (v->find_first_of(":;") != std::string::npos) {
      return Error{
          "NCCL_ALGO: '" + *v +
          "': per-collective algorithms (allreduce:tree;...) are not supported (allowed: " +
          algorithms_allowed() + ", as one name, a list a,b or an exclusion ^a,b)"};
    }
    if (v->find_first_of(",^") != std::string::npos) {
      auto ex = excluded(
          "NCCL_ALGO", *v, nccl_algorithm_list(),
          [](const std::string& n) { return algorithms_of(n, 0); }, algorithms_allowed());
      if (!ex) return ex.error();
      env.algo_excluded = std::move(ex).value();
    } else {
      const std::vector<std::string> a = algorithms_of(*v, servers);
      if (a.empty()) {
        return Error{"NCCL_ALGO: '" + *v + "' is not allowed (allowed: " + algorithms_allowed() +
                     ")"};
      }
      env.algo = a.front();
    }
    note("NCCL_ALGO", *v);
  }
  if (auto v = value("NCCL_PROTO")) {
    if (v->find_first_of(",^") != std::string::npos) {
      auto ex = excluded(
          "NCCL_PROTO", *v, nccl_protocols(),
          [](const std::string& n) -> std::vector<std::string> {
            const auto p = protocol_of(n);
            return p ? std::vector<std::string>{*p} : std::vector<std::string>{};
          },
          protocols_allowed());
      if (!ex) return ex.error();
      env.proto_excluded = std::move(ex).value();
    } else {
      env.proto = protocol_of(*v);
      if (!env.proto) {
        return Error{"NCCL_PROTO: '" + *v + "' is not allowed (allowed: " + protocols_allowed() +
                     ", as one name, a list a,b or an exclusion ^a,b)"};
      }
    }
    note("NCCL_PROTO", *v);
  }
  const std::array<std::pair<const char*, std::optional<int>*>, 3> channel_vars{
      {{"NCCL_NCHANNELS", &env.channels},
       {"NCCL_MIN_NCHANNELS", &env.min_channels},
       {"NCCL_MAX_NCHANNELS", &env.max_channels}}};
  for (const auto& [var, out] : channel_vars) {
    if (auto v = value(var)) {
      auto n = whole_number(var, *v, 1, 64);
      if (!n) return n.error();
      *out = *n;
      note(var, *v);
    }
  }
  if (env.min_channels && env.max_channels && *env.min_channels > *env.max_channels) {
    return Error{"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS: need min <= max (got " +
                 std::to_string(*env.min_channels) + ", " + std::to_string(*env.max_channels) +
                 ")"};
  }
  if (auto v = value("NCCL_COLLNET_ENABLE")) {
    auto n = whole_number("NCCL_COLLNET_ENABLE", *v, 0, 1);
    if (!n) return n.error();
    env.collnet = *n;
    note("NCCL_COLLNET_ENABLE", *v);
  }
  if (auto v = value("NCCL_NVLS_ENABLE")) {
    auto n = whole_number("NCCL_NVLS_ENABLE", *v, 0, 2);
    if (!n) return n.error();
    env.nvls = *n == 0 ? 0 : 1;
    note("NCCL_NVLS_ENABLE", *v);
  }
  return env;
}

}  // namespace stepsim::cli
