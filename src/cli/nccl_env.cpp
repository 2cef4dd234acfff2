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

// NCCL's algorithm names (case-insensitive, as NCCL reads them) and stepsim's algorithm.
// CollNet is SHARP; NVLS across servers is NVLS inside them and SHARP between them.
std::optional<std::string> algorithm_of(const std::string& nccl, int servers) {
  const std::string n = lower(nccl);
  if (n == "ring") return "ring";
  if (n == "tree") return "tree";
  if (n == "nvls") return servers > 1 ? "nvls_sharp" : "nvls";
  if (n == "nvlstree") return "nvls_tree";
  if (n == "collnet" || n == "collnetdirect" || n == "collnetchain") return "sharp";
  return std::nullopt;
}

std::optional<std::string> protocol_of(const std::string& nccl) {
  const std::string n = lower(nccl);
  if (n == "simple" || n == "ll" || n == "ll128") return n;
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

constexpr const char* kAlgos = "Ring, Tree, NVLS, NVLSTree, CollNetDirect or CollNetChain";
constexpr const char* kProtos = "Simple, LL or LL128";

// Every name NCCL_ALGO can give, in stepsim's algorithms (NVLS is both nvls and nvls_sharp: a
// list does not know the server count of every collective).
const std::vector<std::string>& nccl_algorithms() {
  static const std::vector<std::string> all{"ring",       "tree",      "nvls",
                                            "nvls_sharp", "nvls_tree", "sharp"};
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
    const std::function<std::vector<std::string>(const std::string&)>& map, const char* allowed) {
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
          kAlgos + ", as one name, a list a,b or an exclusion ^a,b)"};
    }
    if (v->find_first_of(",^") != std::string::npos) {
      auto ex = excluded(
          "NCCL_ALGO", *v, nccl_algorithms(),
          [](const std::string& n) -> std::vector<std::string> {
            const std::string l = lower(n);
            if (l == "nvls") return {"nvls", "nvls_sharp"};
            const auto a = algorithm_of(n, 1);
            return a ? std::vector<std::string>{*a} : std::vector<std::string>{};
          },
          kAlgos);
      if (!ex) return ex.error();
      env.algo_excluded = std::move(ex).value();
    } else {
      env.algo = algorithm_of(*v, servers);
      if (!env.algo) {
        return Error{"NCCL_ALGO: '" + *v + "' is not allowed (allowed: " + kAlgos + ")"};
      }
    }
    note("NCCL_ALGO", *v);
  }
  if (auto v = value("NCCL_PROTO")) {
    if (v->find_first_of(",^") != std::string::npos) {
      auto ex = excluded(
          "NCCL_PROTO", *v, {"simple", "ll", "ll128"},
          [](const std::string& n) -> std::vector<std::string> {
            const auto p = protocol_of(n);
            return p ? std::vector<std::string>{*p} : std::vector<std::string>{};
          },
          kProtos);
      if (!ex) return ex.error();
      env.proto_excluded = std::move(ex).value();
    } else {
      env.proto = protocol_of(*v);
      if (!env.proto) {
        return Error{"NCCL_PROTO: '" + *v + "' is not allowed (allowed: " + kProtos +
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
