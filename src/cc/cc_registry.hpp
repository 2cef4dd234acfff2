#pragma once
// The registry of congestion-control algorithms. Each src/cc/<name>.cpp registers itself with one
// declaration: its name, a one-line description, a factory, what it needs from the transport and
// the fabric, and (optionally) the parameters it reads, under "cc.<name>.".

#include <functional>
#include <memory>
#include <string>

#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/config/param_table.hpp"

namespace stepsim::cc {

struct CcEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<CongestionControl>(const CcParams&, const CcPath&)> make;
  std::function<CcNeeds(const CcParams&)> needs;
  /// Binds the algorithm's parameters in `table` (keys "cc.<name>.*"); empty: none.
  std::function<void(config::ParamTable&, CcParams&)> params;
};

/// Registers an algorithm at static-initialisation time (one line in its file).
struct CcRegistration {
  explicit CcRegistration(CcEntry entry);
};

}  // namespace stepsim::cc
