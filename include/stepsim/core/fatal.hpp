#pragma once
/// Broken internal invariants: stop the run with a message (the second error channel, STYLE.md 9).

#include <string>

namespace stepsim {

/// Called with the full message; must not return. Default: print to stderr, then abort the job
/// (MPI_Abort when MPI is up, std::abort otherwise).
using FatalHandler = void (*)(const std::string& message);

/// Installs the handler used by fatal(); returns the previous one. The MPI layer installs one.
FatalHandler set_fatal_handler(FatalHandler handler);

/// Reports an internal error (a bug or a model that breaks the engine's rules) and stops.
[[noreturn]] void fatal(const std::string& message);

}  // namespace stepsim

/// Checks an internal invariant; on failure stops with file, line and the message.
#define STEPSIM_CHECK(cond, msg)                                                              \
  do {                                                                                        \
    if (!(cond)) [[unlikely]]                                                                 \
      ::stepsim::fatal(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": check `" + \
                       #cond + "` failed: " + (msg));                                         \
  } while (false)
