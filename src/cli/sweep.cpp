#include "src/cli/sweep.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "stepsim/core/crc32.hpp"

namespace stepsim::cli {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::size_t from = 0;
  for (;;) {
    const auto comma = text.find(',', from);
    items.push_back(text.substr(from, comma == std::string::npos ? comma : comma - from));
    if (comma == std::string::npos) return items;
    from = comma + 1;
  }
}

// A value as a file-name word: a path by its stem, other characters than [A-Za-z0-9._-] as '_'.
std::string name_word(const std::string& value) {
  std::string v = value;
  if (v.find('/') != std::string::npos || v.ends_with(".yaml") || v.ends_with(".yml")) {
    v = std::filesystem::path(v).stem().string();
  }
  for (char& c : v) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) c = '_';
  }
  return v;
}

// "parallel.pp" = "4" -> "pp4"; "topology" = "a.yaml" -> "topology_a".
std::string axis_word(const std::string& key, const std::string& value) {
  const auto dot = key.rfind('.');
  const std::string last = dot == std::string::npos ? key : key.substr(dot + 1);
  const std::string v = name_word(value);
  const bool digit = !v.empty() && v[0] >= '0' && v[0] <= '9';
  return last + (digit ? "" : "_") + v;
}

struct Axis {
  std::size_t set = 0;  // index into the assignments
  std::string key;
  std::vector<std::string> values;
};

// The flattened row: dotted keys of scalars in order.
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
    return;
  }
  if (j.is_array()) {
    std::string words;
    for (const auto& x : j) {
      if (!x.is_string()) return;  // lists of objects (jobs) stay in the JSON table
      words += (words.empty() ? "" : " ") + x.get<std::string>();
    }
    out.emplace_back(prefix, words);
    return;
  }
  if (j.is_string()) {
    out.emplace_back(prefix, j.get<std::string>());
  } else if (j.is_null()) {
    out.emplace_back(prefix, "");
  } else {
    out.emplace_back(prefix, j.dump());
  }
}

std::string csv_field(const std::string& f) {
  if (f.find_first_of(",\"\n") == std::string::npos) return f;
  std::string q = "\"";
  for (char c : f) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

bool takes_comma_list(const std::string& key) {
  return key.starts_with("jobs.") && key.ends_with(".gpus");
}

Result<std::vector<SweepVariant>> expand_sweep(const std::vector<std::string>& sets,
                                               const std::string& fidelity) {
  std::vector<std::string> all = sets;
  if (!fidelity.empty()) all.push_back("fidelity=" + fidelity);
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto eq = all[i].find('=');
    if (eq == std::string::npos) continue;  // the scenario's loader names the error
    const std::string key = all[i].substr(0, eq);
    const std::string value = all[i].substr(eq + 1);
    if (takes_comma_list(key) || value.find(',') == std::string::npos) continue;
    Axis a{i, key, split_commas(value)};
    for (const std::string& v : a.values) {
      if (v.empty()) {
        const std::string opt = key == "fidelity" && i + 1 == all.size() && !fidelity.empty()
                                    ? "--fidelity"
                                    : "--set " + key;
        return Error{opt + ": '" + value +
                     "' has an empty item (a sweep's values are separated by single commas)"};
      }
    }
    axes.push_back(std::move(a));
  }
  std::vector<SweepVariant> variants;
  std::vector<std::size_t> at(axes.size(), 0);  // odometer, the first axis slowest
  for (;;) {
    SweepVariant v;
    v.sets = all;
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const std::string& value = axes[k].values[at[k]];
      v.sets[axes[k].set] = axes[k].key + "=" + value;
      v.varying.emplace_back(axes[k].key, value);
      v.name += (v.name.empty() ? "" : "-") + axis_word(axes[k].key, value);
    }
    variants.push_back(std::move(v));
    std::size_t k = axes.size();
    while (k > 0 && ++at[k - 1] == axes[k - 1].values.size()) at[--k] = 0;
    if (k == 0) break;
  }
  // Two variants with the same name (two axes ending in the same key word): numbered.
  std::set<std::string> names;
  bool clash = false;
  for (const SweepVariant& v : variants) clash = !names.insert(v.name).second || clash;
  for (std::size_t i = 0; clash && i < variants.size(); ++i) {
    variants[i].name = "v" + std::to_string(i + 1) + "-" + variants[i].name;
  }
  return variants;
}

std::string settings_name(const std::vector<std::string>& sets, const std::string& fidelity) {
  std::vector<std::string> all = sets;
  if (!fidelity.empty()) all.push_back("fidelity=" + fidelity);
  std::string name;
  for (const std::string& set : all) {
    const auto eq = set.find('=');
    if (eq == std::string::npos) continue;
    name += (name.empty() ? "" : "-") + axis_word(set.substr(0, eq), set.substr(eq + 1));
  }
  // A file name stays short: a long one keeps its start and a checksum of the whole.
  constexpr std::size_t kMaxName = 96;
  if (name.size() > kMaxName) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(name.data());
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", crc32({bytes, name.size()}));
    name = name.substr(0, kMaxName - 9) + "-" + hex;
  }
  return name;
}

std::string variant_path(const std::string& path, const std::string& name) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + name + p.extension().string())).string();
}

std::string sweep_csv(const std::vector<nlohmann::json>& rows) {
  std::vector<std::string> columns;
  std::map<std::string, std::size_t> index;
  std::vector<std::map<std::string, std::string>> cells(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::pair<std::string, std::string>> flat;
    if (rows[r].contains("variant")) flatten(rows[r]["variant"], "set", flat);  // first
    for (auto it = rows[r].begin(); it != rows[r].end(); ++it) {
      if (it.key() != "variant") flatten(it.value(), it.key(), flat);
    }
    for (auto& [k, v] : flat) {
      if (index.emplace(k, columns.size()).second) columns.push_back(k);
      cells[r][k] = v;
    }
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + csv_field(columns[c]);
  out += "\n";
  for (const auto& row : cells) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto it = row.find(columns[c]);
      out += (c ? "," : "") + (it == row.end() ? std::string() : csv_field(it->second));
    }
    out += "\n";
  }
  return out;
}

}  // namespace stepsim::cli
