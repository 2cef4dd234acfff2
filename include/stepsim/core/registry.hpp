#pragma once
/// Name -> factory registries for swappable parts (partitioners, load balancers, topology
/// generators, ...). A plug-in registers itself with one line in its own file, with a one-line
/// description and the parameter keys it reads (what `stepsim list` prints):
///   const stepsim::Registration<Registry> kMine{"name", [](Args...) { return ...; },
///                                               "what it models", {"fabric.mine_timeout"}};

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim {

/// What a registered part declares about itself.
struct RegistryInfo {
  std::string name;
  std::string description;          ///< one line
  std::vector<std::string> params;  ///< the parameter keys it reads (a parameter table's keys)
};

/// A registry of factories for `Base`, each taking `Args...`. `Tag` tells apart registries of the
/// same base; `what` names the family in error messages ("partitioner").
template <class Base, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(Args...)>;

  static void add(const std::string& name, Factory factory, std::string description = {},
                  std::vector<std::string> params = {}) {
    entries().emplace(name, Entry{std::move(factory), std::move(description), std::move(params)});
  }
  /// Registered names, sorted.
  static std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries()) out.push_back(name);
    return out;
  }
  /// What every registered part declares, sorted by name.
  static std::vector<RegistryInfo> infos() {
    std::vector<RegistryInfo> out;
    for (const auto& [name, e] : entries()) out.push_back({name, e.description, e.params});
    return out;
  }
  /// Creates `name`; the error says what is allowed.
  static Result<std::unique_ptr<Base>> create(const std::string& what, const std::string& name,
                                              Args... args) {
    const auto it = entries().find(name);
    if (it == entries().end()) {
      std::string known;
      for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
      return Error{"unknown " + what + " '" + name + "' (allowed: " + known + ")"};
    }
    return it->second.factory(args...);
  }

 private:
  struct Entry {
    Factory factory;
    std::string description;
    std::vector<std::string> params;
  };
  static std::map<std::string, Entry>& entries() {
    static std::map<std::string, Entry> e;
    return e;
  }
};

/// Registers a factory at static-initialisation time.
template <class R>
struct Registration {
  Registration(const std::string& name, typename R::Factory factory, std::string description = {},
               std::vector<std::string> params = {}) {
    R::add(name, std::move(factory), std::move(description), std::move(params));
  }
};

}  // namespace stepsim
