#pragma once
// The registry of congestion-control algorithms (the Registry template). Each src/cc/<name>.cpp
// registers itself with one declaration: its name, a one-line description, a factory, what it
// needs from the transport and the fabric, and (optionally) the parameters it reads, under
// "cc.<name>.".

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/config/param_table.hpp"
#include "stepsim/core/registry.hpp"

namespace stepsim::cc {

/// What an algorithm declares besides its factory: the registry keeps it as the part's traits.
struct CongestionControl::Traits {
  /// What it needs from the transport and the fabric (with its parameters); empty: nothing.
  std::function<CcNeeds(const CcParams&)> needs;
  /// Binds the algorithm's parameters in `table` (keys "cc.<name>.*"); empty: none.
  std::function<void(config::ParamTable&, CcParams&)> params;
  /// What it needs at its default parameters, for `stepsim list cc`.
  [[nodiscard]] std::vector<std::string> words() const;
};

using CcRegistry = Registry<CongestionControl, const CcParams&, const CcPath&>;

struct CcEntry {
  std::string name;
  std::string description;
  CcRegistry::Factory make;
  std::function<CcNeeds(const CcParams&)> needs;
  /// Binds the algorithm's parameters in `table` (keys "cc.<name>.*"); empty: none.
  std::function<void(config::ParamTable&, CcParams&)> params;
};

/// Registers an algorithm at static-initialisation time (one line in its file).
struct CcRegistration {
  explicit CcRegistration(CcEntry entry);
};

}  // namespace stepsim::cc
