#include "stepsim/core/fatal.hpp"

#include <cstdio>
#include <cstdlib>

namespace stepsim {
namespace {

void default_fatal(const std::string& message) {
  std::fprintf(stderr, "stepsim: internal error: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

FatalHandler g_handler = &default_fatal;

}  // namespace

FatalHandler set_fatal_handler(FatalHandler handler) {
  FatalHandler previous = g_handler;
  g_handler = handler ? handler : &default_fatal;
  return previous;
}

void fatal(const std::string& message) {
  g_handler(message);
  std::abort();  // a handler must not return
}

}  // namespace stepsim
