#include "stepsim/topology/generator.hpp"

#include <memory>

#include "src/topology/generator_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::topology {

std::vector<std::string> generator_names() {
  return GeneratorRegistry::names();
}

Result<const Generator*> find_generator(const std::string& kind) {
  const Generator* g = GeneratorRegistry::instance(kind);
  if (g == nullptr) return GeneratorRegistry::unknown("topology kind", kind);
  return g;
}

void GeneratorParams::set(const std::string& name, std::int64_t value, std::string where) {
  values_[name] = Value{value, std::move(where)};
}

void GeneratorParams::note_absent(const std::string& name, std::string where) {
  values_[name] = Value{std::nullopt, std::move(where)};
}

bool GeneratorParams::has(const std::string& name) const {
  const auto it = values_.find(name);
  return it != values_.end() && it->second.value.has_value();
}

std::int64_t GeneratorParams::get(const std::string& name) const {
  const auto it = values_.find(name);
  STEPSIM_CHECK(it != values_.end() && it->second.value,
                "generator reads parameter '" + name + "' that has no value");
  return *it->second.value;
}

std::int64_t GeneratorParams::get_or(const std::string& name, std::int64_t fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.value.value_or(fallback);
}

std::string GeneratorParams::where(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() || it->second.where.empty() ? "topology." + name : it->second.where;
}

Error GeneratorParams::error(const std::string& name, const std::string& message) const {
  return Error{where(name) + ": " + message};
}

}  // namespace stepsim::topology
