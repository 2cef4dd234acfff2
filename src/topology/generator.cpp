#include "stepsim/topology/generator.hpp"

#include <memory>

#include "src/topology/generator_registry.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::topology {
namespace {

std::map<std::string, std::unique_ptr<Generator>>& registry() {
  static std::map<std::string, std::unique_ptr<Generator>> r;
  return r;
}

}  // namespace

GeneratorRegistration::GeneratorRegistration(std::unique_ptr<Generator> generator) {
  std::string name = generator->name();
  registry().emplace(std::move(name), std::move(generator));
}

std::vector<std::string> generator_names() {
  std::vector<std::string> names;
  for (const auto& [name, generator] : registry()) names.push_back(name);
  return names;
}

Result<const Generator*> find_generator(const std::string& kind) {
  const auto it = registry().find(kind);
  if (it == registry().end()) {
    std::string known;
    for (const auto& n : generator_names()) known += (known.empty() ? "" : ", ") + n;
    return Error{"unknown topology kind '" + kind + "' (allowed: " + known + ")"};
  }
  return static_cast<const Generator*>(it->second.get());
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
