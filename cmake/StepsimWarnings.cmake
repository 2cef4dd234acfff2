# Warning and sanitizer flags for project targets only (third-party headers are SYSTEM).
add_library(stepsim_flags INTERFACE)
target_compile_options(stepsim_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
# GCC 12 reports false -Wrestrict positives on `"literal" + std::string` (GCC PR 105651).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(stepsim_flags INTERFACE -Wno-restrict)
endif()
if(STEPSIM_WERROR)
  target_compile_options(stepsim_flags INTERFACE -Werror)
endif()
if(STEPSIM_NATIVE)
  target_compile_options(stepsim_flags INTERFACE -march=native)
endif()
if(STEPSIM_SANITIZE)
  target_compile_options(stepsim_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                 -fno-sanitize-recover=undefined)
  target_link_options(stepsim_flags INTERFACE -fsanitize=address,undefined)
  # The sanitizers' instrumentation is what costs compile time (UBSan's checks at -O2 -g make a
  # translation unit 8x slower to compile than Release): project code at -O1 with line tables
  # (-g1: file and line in every report) compiles 3x faster than RelWithDebInfo and runs as fast.
  target_compile_options(stepsim_flags INTERFACE -O1 -g1)
endif()
