#pragma once
/// Name -> factory registries for swappable parts (partitioners, load balancers, topology
/// generators, ...). A plug-in registers itself with one line in its own file:
///   const stepsim::Registration<Registry> kMine{"name", [](Args...) { return ...; }};

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim {

/// A registry of factories for `Base`, each taking `Args...`. `Tag` tells apart registries of the
/// same base; `what` names the family in error messages ("partitioner").
template <class Base, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(Args...)>;

  static void add(const std::string& name, Factory factory) {
    entries().emplace(name, std::move(factory));
  }
  /// Registered names, sorted.
  static std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& [name, factory] : entries()) out.push_back(name);
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
    return it->second(args...);
  }

 private:
  static std::map<std::string, Factory>& entries() {
    static std::map<std::string, Factory> e;
    return e;
  }
};

/// Registers a factory at static-initialisation time.
template <class R>
struct Registration {
  Registration(const std::string& name, typename R::Factory factory) {
    R::add(name, std::move(factory));
  }
};

}  // namespace stepsim
