#pragma once
// Self-registration of topology generators (the Registry template, one shared instance each):
// one `const GeneratorRegistration kX{[] { return std::make_unique<X>(); }};` line in the
// generator's own file adds it, under its name() and description(), to find_generator().

#include <memory>

#include "stepsim/core/registry.hpp"
#include "stepsim/topology/generator.hpp"

namespace stepsim::topology {

using GeneratorRegistry = Registry<Generator>;
using GeneratorRegistration = NamedRegistration<GeneratorRegistry>;

}  // namespace stepsim::topology
