#include "stepsim/config/param_table.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <sstream>

#include "stepsim/config/yaml_input.hpp"

namespace stepsim::config {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

template <class T>
Result<T> parse_number(const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) return Error{"'" + text + "' is not a number"};
  return v;
}

template <class T>
std::string range_text(T lo, T hi) {
  std::ostringstream s;
  s << lo << ".." << hi;
  return s.str();
}

// A value that does not parse: the parser's message and the allowed range.
template <class T>
Error with_range(const Error& e, T lo, T hi, const std::string& unit = "") {
  return Error{e.message + " (allowed: " + range_text(lo, hi) + unit + ")"};
}

}  // namespace

Result<bool> ParamTable::set(const std::string& key, const std::string& text) const {
  for (const Param& p : params_) {
    if (p.key != key) continue;
    if (text.size() > kMaxTextValueBytes) {
      return Error{key + ": a value of " + std::to_string(text.size()) + " bytes (at most " +
                   std::to_string(kMaxTextValueBytes) + ")"};
    }
    if (invalid_utf8_at(text) != std::string::npos) {
      return Error{key + ": the value is not UTF-8 text"};
    }
    auto r = p.set(text);
    if (!r) return Error{key + ": " + r.error().message};
    return true;
  }
  // Unknown: list the keys of the same section.
  const std::string section = key.substr(0, key.find('.'));
  std::vector<std::string> near;
  for (const Param& p : params_) {
    if (p.key.substr(0, p.key.find('.')) == section) near.push_back(p.key);
  }
  if (near.empty()) {
    std::vector<std::string> sections;
    for (const Param& p : params_) {
      const std::string s = p.key.substr(0, p.key.find('.'));
      if (sections.empty() || sections.back() != s) sections.push_back(s);
    }
    return Error{key + ": unknown key (sections: " + join(sections) + ")"};
  }
  return Error{key + ": unknown key (allowed: " + join(near) + ")"};
}

Result<bool> ParamTable::apply(const std::string& assignment) const {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Error{"'" + assignment + "' is not key=value"};
  }
  return set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

namespace {

Result<bool> walk(const ParamTable& table, const YAML::Node& node, const std::string& prefix,
                  const std::string& source) {
  for (const auto& kv : node) {
    const std::string where = source + ":" + std::to_string(kv.first.Mark().line + 1) + ": ";
    if (!kv.first.IsScalar()) return Error{where + "keys must be plain words"};
    const std::string key = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    if (kv.second.IsMap()) {
      if (auto r = walk(table, kv.second, key, source); !r) return r;
      continue;
    }
    if (!kv.second.IsScalar()) return Error{where + key + ": expected a single value"};
    if (auto r = table.set(key, kv.second.Scalar()); !r) return Error{where + r.error().message};
  }
  return true;
}

}  // namespace

Result<bool> ParamTable::load_yaml_text(const std::string& text, const std::string& source) const {
  auto root = parse_yaml_document(text, source);
  if (!root) return root.error();
  if (root->IsNull()) return true;
  if (!root->IsMap()) return Error{source + ": expected a map of sections"};
  try {
    return walk(*this, *root, "", source);
  } catch (const YAML::Exception& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
}

Result<bool> ParamTable::load_yaml_map(const YAML::Node& map, const std::string& prefix,
                                       const std::string& source) const {
  try {
    return walk(*this, map, prefix, source);
  } catch (const YAML::Exception& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
}

Result<bool> ParamTable::load_yaml_file(const std::string& path, const std::string& what) const {
  auto text = read_input_file(path, what);
  if (!text) return text.error();
  return load_yaml_text(*text, path);
}

void ParamTable::time(const std::string& key, SimTime& field, SimTime lo, SimTime hi,
                      std::string help) {
  add({key, std::move(help),
       [&field, lo, hi](const std::string& t) -> Result<bool> {
         auto v = parse_time(t);
         if (!v) return v.error();
         if (*v < lo || *v > hi) {
           return Error{"'" + t + "' is out of range (" + to_string(lo) + ".." + to_string(hi) +
                        ")"};
         }
         field = *v;
         return true;
       },
       [&field] { return to_string(field); }});
}

void ParamTable::rate(const std::string& key, DataRate& field, std::string help) {
  add({key, std::move(help),
       [&field](const std::string& t) -> Result<bool> {
         auto v = parse_rate(t);
         if (!v) return v.error();
         if (v->bits_per_second() < 0) return Error{"'" + t + "' must be >= 0"};
         field = *v;
         return true;
       },
       [&field] { return to_string(field); }});
}

namespace {

// A field set from `parse` within [lo, hi] and shown by `show`: the pattern of every binder.
template <class T, class Parse, class Show>
Param ranged(const std::string& key, std::string help, T& field, T lo, T hi, std::string unit,
             Parse parse, Show show) {
  return Param{key, std::move(help),
               [&field, lo, hi, unit, parse](const std::string& t) -> Result<bool> {
                 auto v = parse(t);
                 if (!v) return with_range(v.error(), lo, hi, unit);
                 if (*v < lo || *v > hi) {
                   return Error{"'" + t + "' is out of range (" + range_text(lo, hi) + unit + ")"};
                 }
                 field = *v;
                 return true;
               },
               [&field, show] { return show(field); }};
}

Result<std::int64_t> parse_byte_count(const std::string& t) {
  auto v = parse_bytes(t);
  if (!v) return v.error();
  return v->count();
}

}  // namespace

void ParamTable::bytes(const std::string& key, Bytes& field, std::int64_t lo, std::int64_t hi,
                       std::string help) {
  add({key, std::move(help),
       [&field, lo, hi](const std::string& t) -> Result<bool> {
         auto v = parse_bytes(t);
         if (!v) return v.error();
         if (v->count() < lo || v->count() > hi) {
           return Error{"'" + t + "' is out of range (" + range_text(lo, hi) + " bytes)"};
         }
         field = *v;
         return true;
       },
       [&field] { return to_string(field); }});
}

void ParamTable::bytes(const std::string& key, std::int64_t& field, std::int64_t lo,
                       std::int64_t hi, std::string help) {
  add(ranged<std::int64_t>(key, std::move(help), field, lo, hi, " bytes", parse_byte_count,
                           [](std::int64_t v) { return std::to_string(v); }));
}

void ParamTable::integer(const std::string& key, int& field, int lo, int hi, std::string help) {
  add(ranged<int>(key, std::move(help), field, lo, hi, "", parse_number<int>,
                  [](int v) { return std::to_string(v); }));
}

void ParamTable::integer(const std::string& key, std::int64_t& field, std::int64_t lo,
                         std::int64_t hi, std::string help) {
  add(ranged<std::int64_t>(key, std::move(help), field, lo, hi, "", parse_number<std::int64_t>,
                           [](std::int64_t v) { return std::to_string(v); }));
}

void ParamTable::real(const std::string& key, double& field, double lo, double hi,
                      std::string help) {
  add({key, std::move(help),
       [&field, lo, hi](const std::string& t) -> Result<bool> {
         auto v = parse_number<double>(t);
         if (!v) return with_range(v.error(), lo, hi);
         if (!(*v >= lo && *v <= hi)) {
           return Error{"'" + t + "' is out of range (" + range_text(lo, hi) + ")"};
         }
         field = *v;
         return true;
       },
       [&field] {
         std::ostringstream s;
         s << field;
         return s.str();
       }});
}

void ParamTable::boolean(const std::string& key, bool& field, std::string help) {
  add({key, std::move(help),
       [&field](const std::string& t) -> Result<bool> {
         if (t == "true" || t == "on" || t == "yes") {
           field = true;
         } else if (t == "false" || t == "off" || t == "no") {
           field = false;
         } else {
           return Error{"'" + t + "' is not a boolean (allowed: true, false)"};
         }
         return true;
       },
       [&field] { return std::string(field ? "true" : "false"); }});
}

const Param* ParamTable::find(const std::string& key) const {
  for (const Param& p : params_) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

std::vector<std::string> ParamTable::choices(const std::string& key) const {
  for (const auto& [k, allowed] : choices_) {
    if (k == key) return allowed;
  }
  return {};
}

void ParamTable::choice(const std::string& key, std::string& field,
                        std::vector<std::string> allowed, std::string help) {
  add({key, std::move(help),
       [&field, allowed](const std::string& t) -> Result<bool> {
         for (const auto& a : allowed) {
           if (a == t) {
             field = t;
             return true;
           }
         }
         return Error{"'" + t + "' is not allowed (allowed: " + join(allowed) + ")"};
       },
       [&field] { return field; }});
  choices_.emplace_back(key, std::move(allowed));
}

}  // namespace stepsim::config
