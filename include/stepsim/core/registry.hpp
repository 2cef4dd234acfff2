#pragma once
/// Name -> factory registries for swappable parts (partitioners, load balancers, topology
/// generators, ...). A plug-in registers itself with one line in its own file, with a one-line
/// description and the parameter keys it reads (what `stepsim list` prints):
///   const stepsim::Registration<Registry> kMine{"name", [](Args...) { return ...; },
///                                               "what it models", {"fabric.mine_timeout"}};
/// A family whose parts differ in what the rest of the simulator must know about them declares
/// a traits struct in its interface (`using Traits = LbTraits;` in fabric::LoadBalancer: whether
/// a policy reorders a flow's packets); each part states its traits in its registration (a fifth
/// argument) and callers ask the registry (`traits(name)`), never a list of names. A family
/// without one registers no traits. The same shape fits any family: a collective algorithm's
/// constraints (kinds, shapes, hardware) would be its Traits.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim {

/// What a registered part declares about itself.
struct RegistryInfo {
  std::string name;
  std::string description;          ///< one line
  std::vector<std::string> params;  ///< the parameter keys it reads (a parameter table's keys)
  std::vector<std::string> traits;  ///< its traits as `stepsim list` prints them (Traits::words)
};

/// The traits of a family that declares none.
struct NoTraits {
  [[nodiscard]] std::vector<std::string> words() const { return {}; }
};

/// `Base::Traits` when the family's interface declares one, NoTraits otherwise. A Traits type is
/// default-constructible (the defaults are what a part that states nothing is) and has
/// `words()`: the traits it holds, one short phrase each, for `stepsim list`.
template <class Base, class = void>
struct RegistryTraits {
  using type = NoTraits;
};
template <class Base>
struct RegistryTraits<Base, std::void_t<typename Base::Traits>> {
  using type = typename Base::Traits;
};

/// A registry of factories for `Base`, each taking `Args...`, with the traits each part declares
/// (RegistryTraits<Base>); `what` names the family in error messages ("partitioner").
template <class Base, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(Args...)>;
  using Traits = typename RegistryTraits<Base>::type;

  static void add(const std::string& name, Factory factory, std::string description = {},
                  std::vector<std::string> params = {}, Traits traits = {}) {
    entries().emplace(name, Entry{std::move(factory), std::move(description), std::move(params),
                                  std::move(traits)});
  }
  /// The traits `name` declared; nullptr when nothing is registered under it.
  static const Traits* traits(const std::string& name) {
    const auto it = entries().find(name);
    return it == entries().end() ? nullptr : &it->second.traits;
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
    for (const auto& [name, e] : entries()) {
      out.push_back({name, e.description, e.params, e.traits.words()});
    }
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
    Traits traits;
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
               std::vector<std::string> params = {}, typename R::Traits traits = {}) {
    R::add(name, std::move(factory), std::move(description), std::move(params), std::move(traits));
  }
};

}  // namespace stepsim
