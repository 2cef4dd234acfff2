#pragma once
// Self-registration of topology generators: one `const GeneratorRegistration kX{
// std::make_unique<X>()};` line in the generator's own file adds it to find_generator().

#include <memory>

#include "stepsim/topology/generator.hpp"

namespace stepsim::topology {

struct GeneratorRegistration {
  explicit GeneratorRegistration(std::unique_ptr<Generator> generator);
};

}  // namespace stepsim::topology
