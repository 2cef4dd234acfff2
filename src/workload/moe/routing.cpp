// moe.routing (see routing.hpp).
#include "src/workload/moe/routing.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <utility>

#include "stepsim/pdes/rng.hpp"

namespace stepsim::workload {

namespace {

constexpr std::uint32_t kRoutingSeed = 0x6d6f6572;  // "moer": the routing permutations' stream

// ALPHA of "zipf:ALPHA", or a negative number when the text is not one.
double zipf_alpha(const std::string& routing) {
  if (!routing.starts_with("zipf:")) return -1;
  const std::string a = routing.substr(5);
  double v = -1;
  const auto [end, ec] = std::from_chars(a.data(), a.data() + a.size(), v);
  if (ec != std::errc{} || end != a.data() + a.size() || !std::isfinite(v)) return -1;
  return v;
}

Error routing_error(const std::string& routing) {
  return Error{"moe.routing: expected balanced, zipf:ALPHA (ALPHA >= 0) or file:PATH (got '" +
               routing + "')"};
}

// One line of a loads file: the numbers, split at spaces, tabs or commas.
Result<std::vector<double>> parse_loads_line(const std::string& line, int experts,
                                             const std::string& where) {
  std::string text = line;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<double> row;
  std::string word;
  while (in >> word) {
    double v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc{} || end != word.data() + word.size() || !std::isfinite(v) || v < 0) {
      return Error{where + "moe.routing file: '" + word +
                   "' is not a token count or fraction (a number >= 0)"};
    }
    row.push_back(v);
  }
  if (static_cast<int>(row.size()) != experts) {
    return Error{where + "moe.routing file: expected " + std::to_string(experts) +
                 " loads (one per expert, model.experts), got " + std::to_string(row.size())};
  }
  const double sum = std::accumulate(row.begin(), row.end(), 0.0);
  if (sum <= 0) return Error{where + "moe.routing file: every load is zero"};
  for (double& v : row) v /= sum;
  return row;
}

}  // namespace

std::vector<double> zipf_pmf(int experts, double alpha) {
  std::vector<double> p(static_cast<std::size_t>(std::max(experts, 0)));
  double h = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = std::pow(static_cast<double>(i + 1), -alpha);
    h += p[i];
  }
  for (double& v : p) v /= h;
  return p;
}

std::vector<double> zipf_layer_loads(int experts, double alpha, int moe_layer) {
  const std::vector<double> pmf = zipf_pmf(experts, alpha);
  std::vector<int> order(pmf.size());
  std::iota(order.begin(), order.end(), 0);
  pdes::Rng rng(kRoutingSeed, static_cast<std::uint64_t>(moe_layer), 0);
  for (std::size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    const auto j = static_cast<std::size_t>(rng.uniform() * static_cast<double>(i));
    std::swap(order[i - 1], order[std::min(j, i - 1)]);
  }
  std::vector<double> loads(pmf.size());
  for (std::size_t i = 0; i < pmf.size(); ++i) loads[static_cast<std::size_t>(order[i])] = pmf[i];
  return loads;
}

Result<std::vector<std::vector<double>>> read_routing(const std::string& routing, int experts,
                                                      int moe_layers, const std::string& base_dir) {
  std::vector<std::vector<double>> rows;
  if (routing == "balanced") return rows;
  if (routing.starts_with("zipf:")) {
    if (zipf_alpha(routing) < 0) return routing_error(routing);
    return rows;
  }
  if (!routing.starts_with("file:") || routing.size() == 5) return routing_error(routing);
  std::filesystem::path path(routing.substr(5));
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  const std::string name = path.lexically_normal().string();
  std::ifstream in(name);
  if (!in) return Error{"moe.routing: cannot read " + name};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r,") == std::string::npos) continue;
    auto row = parse_loads_line(line, experts, name + ":" + std::to_string(n) + ": ");
    if (!row) return row.error();
    rows.push_back(std::move(row).value());
  }
  if (rows.size() != 1 && static_cast<int>(rows.size()) != moe_layers) {
    return Error{name + ": moe.routing file: expected one line of loads per MoE layer (" +
                 std::to_string(moe_layers) + ") or one line for all, got " +
                 std::to_string(rows.size())};
  }
  return rows;
}

namespace {

// zipf:ALPHA's loads depend on a few numbers only, and a step (and `stepsim plan`'s every
// layout) asks for them many times: the last few results, per thread, by those numbers.
struct ZipfKey {
  int experts;
  double alpha;
  int layers;
  int ep;
  bool dropless;
  double capacity_factor;
  bool operator==(const ZipfKey&) const = default;
};

struct ZipfMemo {
  static constexpr std::size_t kSize = 16;
  std::array<std::pair<ZipfKey, MoeLoad>, kSize> entries{};
  std::size_t used = 0;
  std::size_t next = 0;  // the entry replaced next once all are used
  const MoeLoad* find(const ZipfKey& k) const {
    for (std::size_t i = 0; i < used; ++i) {
      if (entries[i].first == k) return &entries[i].second;
    }
    return nullptr;
  }
  void put(const ZipfKey& k, const MoeLoad& v) {
    entries[next] = {k, v};
    used = std::max(used, next + 1);
    next = (next + 1) % kSize;
  }
};

}  // namespace

MoeLoad moe_load(const Scenario& s) {
  const ModelSpec& m = s.model;
  const int ep = std::max(s.par.ep, 1);
  const double cf = m.capacity_factor;
  MoeLoad out{s.moe.dropless ? 1.0 : cf, 1.0 / ep, 0};
  const double alpha = zipf_alpha(s.moe.routing);
  const auto& file = s.moe.expert_loads;
  const bool from_file = s.moe.routing.starts_with("file:") && !file.empty();
  if (m.experts == 0 || (alpha < 0 && !from_file)) return out;  // balanced
  const int layers = std::max(m.layers - m.dense_layers, 1);
  thread_local ZipfMemo memo;
  const ZipfKey key{m.experts, alpha, layers, ep, s.moe.dropless, cf};
  if (!from_file) {
    if (const MoeLoad* hit = memo.find(key)) return *hit;
  }
  const int per_rank = m.experts / ep;
  double busiest = 0;
  double dropped = 0;
  for (int l = 0; l < layers; ++l) {
    const std::vector<double> f = from_file
                                      ? file[file.size() == 1 ? 0 : static_cast<std::size_t>(l)]
                                      : zipf_layer_loads(m.experts, alpha, l);
    double most = 0;
    for (int r = 0; r < ep; ++r) {
      const auto first = f.begin() + static_cast<std::ptrdiff_t>(r) * per_rank;
      most = std::max(most, std::accumulate(first, first + per_rank, 0.0));
    }
    busiest += most;
    if (!s.moe.dropless) {
      for (double v : f) dropped += std::max(0.0, v - cf / m.experts);
    }
  }
  out.busiest_share = busiest / layers;
  out.dropped = dropped / layers;
  if (s.moe.dropless) out.tokens = ep * out.busiest_share;
  if (!from_file) memo.put(key, out);
  return out;
}

}  // namespace stepsim::workload
