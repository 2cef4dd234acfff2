# Every dependency comes from Debian 12. A missing one stops the configure with the package name.
#   MPI            libopenmpi-dev openmpi-bin
#   OpenMP         (part of g++)
#   HDF5 parallel  libhdf5-openmpi-dev
#   Kokkos         libtrilinos-kokkos-dev   (or a user's own Kokkos via Kokkos_ROOT)
#   GoogleTest     libgtest-dev
#   yaml-cpp       libyaml-cpp-dev
#   CLI11          libcli11-dev
#   Random123      librandom123-dev
#   METIS          libmetis-dev
#   nlohmann_json  nlohmann-json3-dev

function(stepsim_missing what package)
  message(FATAL_ERROR "stepsim: ${what} not found. On Debian 12 install it with:\n"
                      "  apt-get install ${package}\n"
                      "(or run scripts/setup.sh, which installs every dependency)")
endfunction()

find_package(MPI COMPONENTS C CXX QUIET)
if(NOT MPI_FOUND)
  stepsim_missing("MPI (Open MPI)" "libopenmpi-dev openmpi-bin")
endif()

find_package(OpenMP COMPONENTS CXX QUIET)
if(NOT OpenMP_CXX_FOUND)
  stepsim_missing("OpenMP" "libgomp1 (comes with g++)")
endif()

# Parallel HDF5, Open MPI flavour. Debian installs it beside the serial one; point CMake at it.
if(NOT HDF5_ROOT AND EXISTS /usr/lib/x86_64-linux-gnu/hdf5/openmpi)
  set(HDF5_PREFER_PARALLEL ON)
  set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5pcc CACHE FILEPATH "")
endif()
set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 COMPONENTS C QUIET)
if(NOT HDF5_FOUND)
  stepsim_missing("HDF5 (parallel)" "libhdf5-openmpi-dev hdf5-tools")
endif()
set(_h5_parallel OFF)
foreach(dir IN LISTS HDF5_C_INCLUDE_DIRS HDF5_INCLUDE_DIRS)
  if(EXISTS "${dir}/H5pubconf.h")
    file(STRINGS "${dir}/H5pubconf.h" _h5p REGEX "^#define H5_HAVE_PARALLEL 1")
    if(_h5p)
      set(_h5_parallel ON)
    endif()
  endif()
endforeach()
if(NOT _h5_parallel)
  stepsim_missing("a parallel HDF5 (H5_HAVE_PARALLEL is not set in the HDF5 found at ${HDF5_INCLUDE_DIRS})"
                  "libhdf5-openmpi-dev")
endif()
add_library(stepsim_hdf5 INTERFACE)
target_include_directories(stepsim_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
# zlib: the step's tables are deflated by the writer (HDF5's deflate filter reads them).
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  stepsim_missing("zlib" "zlib1g-dev")
endif()
target_link_libraries(stepsim_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES} ZLIB::ZLIB)
target_compile_definitions(stepsim_hdf5 INTERFACE ${HDF5_DEFINITIONS})

# Kokkos: a user's own install (find_package) when its target is usable; otherwise Debian's
# Trilinos Kokkos, whose CMake package points at the non-existent /usr/lib/include.
add_library(stepsim_kokkos INTERFACE)
set(_kokkos_ok OFF)
find_package(Kokkos QUIET)
if(TARGET Kokkos::kokkos)
  set(_kokkos_ok ON)
  foreach(tgt Kokkos::kokkos Kokkos::kokkoscore)
    if(TARGET ${tgt})
      get_target_property(_kinc ${tgt} INTERFACE_INCLUDE_DIRECTORIES)
      foreach(d IN LISTS _kinc)
        if(d AND NOT d MATCHES "^\\$<" AND NOT EXISTS "${d}")
          set(_kokkos_ok OFF)
        endif()
      endforeach()
    endif()
  endforeach()
endif()
if(_kokkos_ok)
  target_link_libraries(stepsim_kokkos INTERFACE Kokkos::kokkos)
  set(STEPSIM_KOKKOS_SOURCE "find_package(Kokkos) at ${Kokkos_DIR}")
else()
  find_path(STEPSIM_KOKKOS_INCLUDE Kokkos_Core.hpp PATHS /usr/include/trilinos NO_DEFAULT_PATH)
  find_library(STEPSIM_KOKKOS_CORE trilinos_kokkoscore)
  if(NOT STEPSIM_KOKKOS_INCLUDE OR NOT STEPSIM_KOKKOS_CORE)
    stepsim_missing("Kokkos" "libtrilinos-kokkos-dev")
  endif()
  target_include_directories(stepsim_kokkos SYSTEM INTERFACE ${STEPSIM_KOKKOS_INCLUDE})
  target_link_libraries(stepsim_kokkos INTERFACE ${STEPSIM_KOKKOS_CORE} ${CMAKE_DL_LIBS})
  set(STEPSIM_KOKKOS_SOURCE "Debian Trilinos Kokkos at ${STEPSIM_KOKKOS_INCLUDE} (imported by hand)")
endif()

find_package(yaml-cpp QUIET)
if(NOT yaml-cpp_FOUND)
  stepsim_missing("yaml-cpp" "libyaml-cpp-dev")
endif()
if(TARGET yaml-cpp::yaml-cpp)
  set(STEPSIM_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(STEPSIM_YAML_TARGET yaml-cpp)
endif()

find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  stepsim_missing("CLI11" "libcli11-dev")
endif()

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  stepsim_missing("nlohmann_json" "nlohmann-json3-dev")
endif()

find_path(STEPSIM_RANDOM123_INCLUDE Random123/philox.h)
if(NOT STEPSIM_RANDOM123_INCLUDE)
  stepsim_missing("Random123" "librandom123-dev")
endif()
add_library(stepsim_random123 INTERFACE)
target_include_directories(stepsim_random123 SYSTEM INTERFACE ${STEPSIM_RANDOM123_INCLUDE})

find_path(STEPSIM_METIS_INCLUDE metis.h)
find_library(STEPSIM_METIS_LIBRARY metis)
if(NOT STEPSIM_METIS_INCLUDE OR NOT STEPSIM_METIS_LIBRARY)
  stepsim_missing("METIS" "libmetis-dev")
endif()
add_library(stepsim_metis INTERFACE)
target_include_directories(stepsim_metis SYSTEM INTERFACE ${STEPSIM_METIS_INCLUDE})
target_link_libraries(stepsim_metis INTERFACE ${STEPSIM_METIS_LIBRARY})

if(STEPSIM_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    stepsim_missing("GoogleTest" "libgtest-dev")
  endif()
endif()

message(STATUS "stepsim: MPI ${MPI_CXX_VERSION}, HDF5 ${HDF5_VERSION} (parallel), "
               "Kokkos from ${STEPSIM_KOKKOS_SOURCE}")
