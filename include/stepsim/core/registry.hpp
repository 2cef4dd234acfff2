#pragma once
/// Name -> factory registries for swappable parts (partitioners, load balancers, topology
/// generators, ...). A plug-in registers itself with one line in its own file, with a one-line
/// description and the parameter keys it reads (what `stepsim list` prints):
///   const stepsim::Registration<Registry> kMine{"name", [](Args...) { return ...; },
///                                               "what it models", {"fabric.mine_timeout"}};
/// Parts are listed in registration rank, then name: a family whose order means something (the
/// collective algorithms': the tuner's tie-break) gives each part an explicit rank (a sixth
/// argument); the others leave it 0 and list by name. A family whose factories take no arguments
/// (stateless parts: collective algorithms, topology generators) also gets one shared instance
/// of each part, made at registration (`instance(name)`, `instances()`).
/// A family whose parts differ in what the rest of the simulator must know about them declares
/// a traits struct in its interface (`using Traits = LbTraits;` in fabric::LoadBalancer: whether
/// a policy reorders a flow's packets); each part states its traits in its registration (a fifth
/// argument) and callers ask the registry (`traits(name)`), never a list of names. A family
/// without one registers no traits. The same shape fits any family: a collective algorithm's
/// constraints (kinds, shapes, hardware) would be its Traits.

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
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
                  std::vector<std::string> params = {}, Traits traits = {}, int rank = 0) {
    Entry e{std::move(factory),
            std::move(description),
            std::move(params),
            std::move(traits),
            rank,
            nullptr};
    if constexpr (sizeof...(Args) == 0) e.shared = e.factory();
    entries().emplace(name, std::move(e));
  }
  /// The traits `name` declared; nullptr when nothing is registered under it.
  static const Traits* traits(const std::string& name) {
    const auto it = entries().find(name);
    return it == entries().end() ? nullptr : &it->second.traits;
  }
  /// Registered names, by rank then name.
  static std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& [name, entry] : ordered()) out.push_back(*name);
    return out;
  }
  /// What every registered part declares, by rank then name.
  static std::vector<RegistryInfo> infos() {
    std::vector<RegistryInfo> out;
    for (const auto& [name, e] : ordered()) {
      out.push_back({*name, e->description, e->params, e->traits.words()});
    }
    return out;
  }
  /// The shared instance of `name` (families whose factories take no arguments); nullptr when
  /// nothing is registered under it.
  static const Base* instance(const std::string& name) {
    static_assert(sizeof...(Args) == 0, "shared instances need factories without arguments");
    const auto it = entries().find(name);
    return it == entries().end() ? nullptr : it->second.shared.get();
  }
  /// Every shared instance, by rank then name.
  static std::vector<const Base*> instances() {
    static_assert(sizeof...(Args) == 0, "shared instances need factories without arguments");
    std::vector<const Base*> out;
    for (const auto& [name, e] : ordered()) out.push_back(e->shared.get());
    return out;
  }
  /// Creates `name`; the error says what is allowed.
  static Result<std::unique_ptr<Base>> create(const std::string& what, const std::string& name,
                                              Args... args) {
    const auto it = entries().find(name);
    if (it == entries().end()) return unknown(what, name);
    return it->second.factory(args...);
  }
  /// The error for a `name` nothing is registered under: "unknown WHAT 'NAME' (allowed: ...)".
  static Error unknown(const std::string& what, const std::string& name) {
    std::string known;
    for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    return Error{"unknown " + what + " '" + name + "' (allowed: " + known + ")"};
  }

 private:
  struct Entry {
    Factory factory;
    std::string description;
    std::vector<std::string> params;
    Traits traits;
    int rank = 0;                        ///< listing order (then name)
    std::unique_ptr<const Base> shared;  ///< the shared instance (no-argument factories)
  };
  // The entries by rank, then name (the map's order).
  static std::vector<std::pair<const std::string*, const Entry*>> ordered() {
    std::vector<std::pair<const std::string*, const Entry*>> out;
    for (const auto& [name, e] : entries()) out.emplace_back(&name, &e);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.second->rank < b.second->rank; });
    return out;
  }
  static std::map<std::string, Entry>& entries() {
    static std::map<std::string, Entry> e;
    return e;
  }
};

/// Registers a factory at static-initialisation time.
template <class R>
struct Registration {
  Registration(const std::string& name, typename R::Factory factory, std::string description = {},
               std::vector<std::string> params = {}, typename R::Traits traits = {}, int rank = 0) {
    R::add(name, std::move(factory), std::move(description), std::move(params), std::move(traits),
           rank);
  }
};

/// Registers a part that names and describes itself (`name()`, `description()`: collective
/// algorithms, topology generators) at static-initialisation time, with its rank.
template <class R>
struct NamedRegistration {
  explicit NamedRegistration(const typename R::Factory& make, int rank = 0) {
    const auto part = make();
    R::add(part->name(), make, part->description(), {}, {}, rank);
  }
};

}  // namespace stepsim
