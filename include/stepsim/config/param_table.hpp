#pragma once
/// Named, typed, range-checked parameters bound to the fields of a parameter struct, so that one
/// declaration serves the YAML loader, `--set key=value` overrides and `stepsim list` (STYLE.md
/// habit 8). Keys are dotted paths ("transport.rto"); values are text in the project's unit
/// syntax ("50us", "400Gbps", "4KiB"). An error names the key, the value and what is allowed.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace YAML {
class Node;
}  // namespace YAML

namespace stepsim::config {

struct Param {
  std::string key;   ///< dotted path
  std::string help;  ///< meaning, unit and range
  std::function<Result<bool>(const std::string&)> set;
  std::function<std::string()> get;  ///< the current value as text
};

class ParamTable {
 public:
  void add(Param p) { params_.push_back(std::move(p)); }
  /// A parameter with its own setter whose values are a list (help texts list them).
  void add(Param p, std::vector<std::string> allowed) {
    choices_.emplace_back(p.key, std::move(allowed));
    add(std::move(p));
  }
  [[nodiscard]] const std::vector<Param>& params() const { return params_; }
  /// The parameter `key`, or null.
  [[nodiscard]] const Param* find(const std::string& key) const;
  /// The allowed values of the choice `key` (help texts list them); empty for other keys.
  [[nodiscard]] std::vector<std::string> choices(const std::string& key) const;
  /// Sets `key` from `text`; the error names the key and, for an unknown key, the known keys
  /// that share its first component.
  Result<bool> set(const std::string& key, const std::string& text) const;
  /// Applies "key=value".
  Result<bool> apply(const std::string& assignment) const;
  /// Applies every leaf of a YAML file (nested maps give dotted keys); errors start with
  /// "file:line: key". `what` names the file in read errors.
  Result<bool> load_yaml_file(const std::string& path,
                              const std::string& what = "parameter file") const;
  /// The same for YAML text (`source` names it in errors).
  Result<bool> load_yaml_text(const std::string& text, const std::string& source) const;
  /// The same for a parsed map; `prefix` (may be empty) is put before its keys.
  Result<bool> load_yaml_map(const YAML::Node& map, const std::string& prefix,
                             const std::string& source) const;

  // Binders: a field of the parameter struct with its range.
  void time(const std::string& key, SimTime& field, SimTime lo, SimTime hi, std::string help);
  void rate(const std::string& key, DataRate& field, std::string help);
  void bytes(const std::string& key, Bytes& field, std::int64_t lo, std::int64_t hi,
             std::string help);
  void bytes(const std::string& key, std::int64_t& field, std::int64_t lo, std::int64_t hi,
             std::string help);
  void integer(const std::string& key, int& field, int lo, int hi, std::string help);
  void integer(const std::string& key, std::int64_t& field, std::int64_t lo, std::int64_t hi,
               std::string help);
  void real(const std::string& key, double& field, double lo, double hi, std::string help);
  void boolean(const std::string& key, bool& field, std::string help);
  void choice(const std::string& key, std::string& field, std::vector<std::string> allowed,
              std::string help);

 private:
  std::vector<Param> params_;
  std::vector<std::pair<std::string, std::vector<std::string>>> choices_;  ///< key, allowed
};

}  // namespace stepsim::config
